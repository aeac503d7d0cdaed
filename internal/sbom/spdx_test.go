package main

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuild pins what the SBOM says of a binary: the binary with its
// SHA-256, generated from the main module at its revision, which depends on
// the standard library and on each module linked in (the replacement where
// one replaced it), each with a package URL and its go.sum hash as hex.
func TestBuild(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/baton-sqs/baton", Version: "v1.2.3"},
		Deps: []*debug.Module{
			{Path: "github.com/spf13/cobra", Version: "v1.10.2", Sum: "h1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},
			{Path: "example.com/old", Version: "v0.1.0", Replace: &debug.Module{Path: "example.com/new", Version: "v0.2.0"}},
		},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}, {Key: "CGO_ENABLED", Value: "0"},
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
		},
	}
	doc, err := build(info, "baton-linux-arm64", "ff00")
	if err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-12-01T10:00:00Z" {
		t.Errorf("version %q created %q, want SPDX-2.3 at the commit time", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	if !strings.Contains(doc.CreationInfo.Comment, "GOOS=linux GOARCH=arm64 CGO_ENABLED=0, revision abc123") {
		t.Errorf("creation comment %q lacks the build settings", doc.CreationInfo.Comment)
	}
	if f := doc.Files[0]; f.FileName != "./baton-linux-arm64" || f.Checksums[0] != (checksum{"SHA256", "ff00"}) {
		t.Errorf("file %+v, want the binary with its SHA-256", f)
	}
	want := map[string]string{ // name -> purl
		"github.com/baton-sqs/baton": "pkg:golang/github.com/baton-sqs/baton@v1.2.3",
		"stdlib":                     "pkg:golang/stdlib@1.26.8",
		"github.com/spf13/cobra":     "pkg:golang/github.com/spf13/cobra@v1.10.2",
		"example.com/new":            "pkg:golang/example.com/new@v0.2.0",
	}
	if len(doc.Packages) != len(want) {
		t.Fatalf("%d packages, want %d: %+v", len(doc.Packages), len(want), doc.Packages)
	}
	for _, p := range doc.Packages {
		if got := p.ExternalRefs[0].ReferenceLocator; got != want[p.Name] {
			t.Errorf("package %s: purl %q, want %q", p.Name, got, want[p.Name])
		}
	}
	if c := doc.Packages[2].Checksums; len(c) != 1 || c[0].ChecksumValue != "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" {
		t.Errorf("cobra's checksums %+v, want its go.sum hash as hex", c)
	}
	if got := doc.Packages[3].SourceInfo; got != "replaces example.com/old@v0.1.0" {
		t.Errorf("replacement's sourceInfo %q", got)
	}
	rels := map[string]bool{}
	for _, r := range doc.Relationships {
		rels[r.SPDXElementID+" "+r.RelationshipType+" "+r.RelatedSPDXElement] = true
	}
	for _, r := range []string{
		"SPDXRef-DOCUMENT DESCRIBES SPDXRef-File-binary",
		"SPDXRef-File-binary GENERATED_FROM SPDXRef-Package-main",
		"SPDXRef-Package-main DEPENDS_ON SPDXRef-Package-stdlib",
		"SPDXRef-Package-main DEPENDS_ON SPDXRef-Package-dep-1",
		"SPDXRef-Package-main DEPENDS_ON SPDXRef-Package-dep-2",
	} {
		if !rels[r] {
			t.Errorf("no relationship %q in %v", r, rels)
		}
	}
}

// TestRunOnThisBinary reads a real binary's build information (the test
// binary's own) and checks the JSON written names its main module at the
// version given.
func TestRunOnThisBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(exe, "v9.8.7", &out); err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.Bytes())
	}
	if main := doc.Packages[0]; main.Name != "github.com/baton-sqs/baton" || main.VersionInfo != "v9.8.7" || doc.Files[0].Checksums[0].ChecksumValue == "" {
		t.Fatalf("SBOM of the test binary: main %s %s, file %+v; want the module at the version given", main.Name, main.VersionInfo, doc.Files[0])
	}
}
