// Package architecture holds no code: its test checks that the tree keeps the
// design docs/architecture.md draws, for every package of the module.
package architecture
