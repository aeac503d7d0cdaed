package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGoSDKv1 builds e2e/testdata/gov1 twice, against the AWS SDK for Go v1
// at v1.47.0 (the Query protocol: form-encoded requests, XML answers) and at
// v1.55.8 (AWS JSON 1.0 with the legacy error codes of x-amzn-query-error),
// and runs each against a server that checks the SDK's SigV4 signatures.
// Both are unmodified clients, as services still deployed use them, so the
// Query protocol is exercised here by a real SDK's own XML unmarshalling and
// not only by boto3 with a patched model. The SDK comes from the Go module
// proxy, pinned by the directory's go.sum and json.sum.
func TestGoSDKv1(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(moduleRoot, "e2e", "testdata", "gov1")
	for _, v := range []struct{ name, modfile, protocol string }{
		{"query", "go.mod", "over Query"},
		{"json", "json.mod", "over AWS JSON 1.0"},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			bin := filepath.Join(t.TempDir(), "gov1")
			build := exec.CommandContext(ctx, "go", "build", "-modfile", v.modfile, "-o", bin, ".")
			build.Dir = dir
			// This module's test flags (GOFLAGS=-count=1, say) mean nothing
			// to go build, and the program is a module of its own.
			build.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=")
			}), "GOWORK=off")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build -modfile %s in %s: %v\n%s", v.modfile, dir, err, out)
			}

			srv := startBatonArgs(t, "--account-id", account, "--access-key-id", e2eKeyID, "--secret-access-key", e2eSecret)
			cmd := exec.CommandContext(ctx, bin, srv.URL)
			// The v1 SDK reads AWS_REGION, not AWS_DEFAULT_REGION.
			cmd.Env = append(clientEnv(t), "AWS_REGION=us-east-1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", bin, srv.URL, err, out)
			}
			if !strings.Contains(string(out), v.protocol) {
				t.Fatalf("the SDK did not speak the protocol expected (%s): %s", v.protocol, out)
			}
			t.Logf("%s", out)
		})
	}
}
