// Package layers holds no code: its tests state which packages may import
// which (docs/architecture.md, "Packages in dependency order") and that
// the public packages' API has no internal types.
package layers
