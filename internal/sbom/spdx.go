package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"strings"
	"time"
)

// document is the part of an SPDX 2.3 document this SBOM fills in.
type document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      creationInfo   `json:"creationInfo"`
	Packages          []pkg          `json:"packages"`
	Files             []file         `json:"files"`
	Relationships     []relationship `json:"relationships"`
}

type creationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

type pkg struct {
	SPDXID           string        `json:"SPDXID"`
	Name             string        `json:"name"`
	VersionInfo      string        `json:"versionInfo"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	Checksums        []checksum    `json:"checksums,omitempty"`
	ExternalRefs     []externalRef `json:"externalRefs"`
	SourceInfo       string        `json:"sourceInfo,omitempty"`
}

type file struct {
	SPDXID    string     `json:"SPDXID"`
	FileName  string     `json:"fileName"`
	Checksums []checksum `json:"checksums"`
}

type checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type externalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// build makes the SBOM of a binary named name, whose SHA-256 is sha256Hex,
// from its build information. The document describes the binary, which is
// generated from the main module, which depends on every other module
// linked in and on the Go standard library of the toolchain that built it.
// Its time is the commit time stamped in (vcs.time), so the same binary
// always gets the same document; without one it is now.
func build(info *debug.BuildInfo, name, sha256Hex string) (*document, error) {
	if info.Main.Path == "" {
		return nil, errors.New("the binary names no main module (built with GOFLAGS=-buildvcs=false from outside a module?)")
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	created := time.Now().UTC().Format(time.RFC3339)
	if t, err := time.Parse(time.RFC3339, settings["vcs.time"]); err == nil {
		created = t.UTC().Format(time.RFC3339)
	}
	doc := &document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              name,
		DocumentNamespace: "https://" + info.Main.Path + "/spdx/" + url.PathEscape(name) + "-" + sha256Hex,
		CreationInfo: creationInfo{
			Created:  created,
			Creators: []string{"Tool: baton-sbom (internal/sbom)"},
			Comment:  fmt.Sprintf("From the build information of %s: GOOS=%s GOARCH=%s CGO_ENABLED=%s, revision %s", name, settings["GOOS"], settings["GOARCH"], settings["CGO_ENABLED"], orUnknown(settings["vcs.revision"])),
		},
		Files: []file{{
			SPDXID:    "SPDXRef-File-binary",
			FileName:  "./" + name,
			Checksums: []checksum{{Algorithm: "SHA256", ChecksumValue: sha256Hex}},
		}},
	}
	mainPkg := modulePackage("SPDXRef-Package-main", &info.Main)
	if rev := settings["vcs.revision"]; rev != "" {
		mainPkg.SourceInfo = "built from " + settings["vcs"] + " revision " + rev
		if settings["vcs.modified"] == "true" {
			mainPkg.SourceInfo += " with uncommitted changes"
		}
	}
	goVersion := strings.TrimPrefix(info.GoVersion, "go")
	stdlib := pkg{
		SPDXID:           "SPDXRef-Package-stdlib",
		Name:             "stdlib",
		VersionInfo:      goVersion,
		DownloadLocation: "NOASSERTION",
		ExternalRefs:     []externalRef{purl("stdlib", goVersion)},
	}
	doc.Packages = append(doc.Packages, mainPkg, stdlib)
	doc.Relationships = append(doc.Relationships,
		relationship{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-File-binary"},
		relationship{"SPDXRef-File-binary", "GENERATED_FROM", mainPkg.SPDXID},
		relationship{mainPkg.SPDXID, "DEPENDS_ON", stdlib.SPDXID},
	)
	for i, dep := range info.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		p := modulePackage(fmt.Sprintf("SPDXRef-Package-dep-%d", i+1), m)
		if dep.Replace != nil {
			p.SourceInfo = "replaces " + dep.Path + "@" + dep.Version
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, relationship{mainPkg.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	return doc, nil
}

// modulePackage is the SPDX package of one Go module: its path and version,
// a package URL, and the SHA-256 of its go.sum hash where it has one.
func modulePackage(id string, m *debug.Module) pkg {
	version := m.Version
	if version == "" {
		version = "(devel)"
	}
	p := pkg{
		SPDXID:           id,
		Name:             m.Path,
		VersionInfo:      version,
		DownloadLocation: "NOASSERTION",
		ExternalRefs:     []externalRef{purl(m.Path, version)},
	}
	// go.sum's h1: is base64 of a SHA-256 (of the module's file list).
	if sum, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		if raw, err := base64.StdEncoding.DecodeString(sum); err == nil && len(raw) == 32 {
			p.Checksums = []checksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(raw)}}
		}
	}
	return p
}

// purl is the package URL of a Go module (pkg:golang/PATH@VERSION), the
// form vulnerability scanners match.
func purl(path, version string) externalRef {
	return externalRef{
		ReferenceCategory: "PACKAGE-MANAGER",
		ReferenceType:     "purl",
		ReferenceLocator:  "pkg:golang/" + path + "@" + url.PathEscape(version),
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
