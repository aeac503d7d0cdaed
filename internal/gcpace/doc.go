// Package gcpace keeps a server's garbage-collected heap from growing to
// twice its live size when the live size is large.
//
// Go's collector, at its default GOGC=100, lets the heap grow by as much as
// is live before it collects again. That suits a small live heap, but the
// durable store's index of a large backlog is live for as long as the
// backlog lasts: with 200 MB of index, the heap would peak at 400 MB. The
// Pacer lowers GOGC as the live heap grows so that the growth between
// collections stays near a fixed headroom, and raises it back as the live
// heap shrinks.
package gcpace
