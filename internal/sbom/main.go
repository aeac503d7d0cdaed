// Command sbom writes an SPDX 2.3 JSON software bill of materials for a Go
// binary, from the build information the Go toolchain stamped into it (the
// main module, every module linked in with its version and go.sum hash, the
// Go version and the build settings) and the binary's own SHA-256. It needs
// no network and no other tool: deploy/release.sh runs it on each binary,
// with the release's version for the main module (the build info says
// "(devel)" for a binary built from a work tree).
//
//	go run ./internal/sbom BINARY [VERSION] > BINARY.spdx.json
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
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: sbom BINARY [VERSION] > BINARY.spdx.json")
		os.Exit(2)
	}
	version := ""
	if len(os.Args) == 3 {
		version = os.Args[2]
	}
	if err := run(os.Args[1], version, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

// run writes the SBOM of the binary at path to w; a version other than ""
// replaces the main module's.
func run(path, version string, w io.Writer) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	if version != "" {
		info.Main.Version = version
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
