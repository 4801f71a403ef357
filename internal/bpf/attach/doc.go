// Package attach attaches a loaded uprobe program to the sites of objects.
// It uses one uprobe_multi link per object (Linux 6.6+), else one classic
// link per site (cookies need 5.15+). btrun and usdtlink attach through it.
//
// AttachObject is all or nothing. AttachSites attaches every site the
// kernel accepts and returns the others as Refusals.
//
// docs/architecture.md ("Attaching") says how refused sites are found.
package attach
