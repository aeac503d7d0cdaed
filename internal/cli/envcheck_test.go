package cli_test

import (
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
