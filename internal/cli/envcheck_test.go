package cli_test

import (
	"net"
	"regexp"
	"slices"
	"testing"
)

// A BATON_* variable baton does not read, most likely misspelt, gets one
// warning at start naming it and the variable nearest its name; the server
// still starts. Baton's own variables (another command's, the deploy
// files', the tests' switches) get none.
func TestServeNamesVariablesItDoesNotRead(t *testing.T) {
	t.Parallel()
	p := startServe(t, cliEnv(t,
		"BATON_STOR=postgres://nowhere", "BATON_DATA_DIRR=/nowhere", "BATON_LISTEN_ADDR=127.0.0.1:1", "BATON_FROBNICATE=1",
		"BATON_WORKER_BATCH_SIZE=3", "BATON_ENDPOINT=http://127.0.0.1:1",
		"BATON_LONG_TESTS=1", "BATON_REQUIRE_POSTGRES=1", "BATON_PORT=9400", "BATON_PROGRESS_FD=3"),
		"--store", "memory")
	warned := regexp.MustCompile(`level=WARN msg="ignoring an environment variable baton does not read[^"]*" variable=(\S+)(?: did_you_mean=(\S+))?\n`)
	var got []string
	for _, m := range warned.FindAllStringSubmatch(p.logs.String(), -1) {
		got = append(got, m[1]+">"+m[2])
	}
	want := []string{"BATON_DATA_DIRR>BATON_DATA_DIR", "BATON_FROBNICATE>", "BATON_LISTEN_ADDR>BATON_LISTEN", "BATON_STOR>BATON_STORE"}
	if !slices.Equal(got, want) {
		t.Errorf("variables warned of (name>nearest): %q, want %q\n%s", got, want, p.logs)
	}
}

// baton worker and baton proxy, which read BATON_WORKER_<FLAG> and
// BATON_PROXY_<FLAG>, warn of a BATON_* variable nothing reads as serve
// does, with the variable nearest its name, before they go on (here to
// fail: no server at the queue URL, the proxy's port taken).
func TestWorkerAndProxyNameVariablesTheyDoNotRead(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	warned := regexp.MustCompile(`level=WARN msg="ignoring an environment variable baton does not read[^"]*" variable=(\S+)(?: did_you_mean=(\S+))?\n`)
	for _, args := range [][]string{
		{"worker", "--queue-url", "http://127.0.0.1:1/000000000000/jobs", "--http", "http://127.0.0.1:1/", "--check"},
		{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", taken.Addr().String()},
	} {
		r := runCLI(t, cliEnv(t, "BATON_WORKER_BATCH_SIZ=3", "BATON_PROXY_MAX_LEASE=9", "BATON_LONG_TESTS=1"), nil, args...)
		var got []string
		for _, m := range warned.FindAllStringSubmatch(r.stderr, -1) {
			got = append(got, m[1]+">"+m[2])
		}
		// Each warns of both: the other's misspelt variable is no
		// variable of its own, but one baton reads.
		want := []string{"BATON_PROXY_MAX_LEASE>BATON_PROXY_MAX_LEASES", "BATON_WORKER_BATCH_SIZ>BATON_WORKER_BATCH_SIZE"}
		if r.code != 1 || !slices.Equal(got, want) {
			t.Errorf("baton %s: %v\nvariables warned of (name>nearest): %q, want exit 1 and %q", args[0], r, got, want)
		}
	}
}
