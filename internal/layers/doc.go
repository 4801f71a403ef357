// Package layers holds no code: its test states which packages may import
// which (docs/architecture.md, "Packages in dependency order").
package layers
