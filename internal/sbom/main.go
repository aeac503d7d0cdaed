// Command sbom writes an SPDX 2.3 JSON software bill of materials for a Go
// binary, from the build information the Go toolchain stamped into it (the
// main module, every module linked in with its version and go.sum hash, the
// Go version and the build settings) and the binary's own SHA-256. It needs
// no network and no other tool: deploy/release.sh runs it on each binary.
//
//	go run ./internal/sbom BINARY > BINARY.spdx.json
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sbom BINARY > BINARY.spdx.json")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

// run writes the SBOM of the binary at path to w.
func run(path string, w io.Writer) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	doc, err := build(info, filepath.Base(path), hex.EncodeToString(sum[:]))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
