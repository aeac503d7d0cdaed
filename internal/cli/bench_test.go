package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil"
)

// benchJSON is the part of `baton bench --json` the tests read.
type benchJSON struct {
	Endpoint  string `json:"endpoint"`
	SelfStore string `json:"self_store"`
	Results   []struct {
		Scenario string `json:"scenario"`
		Ceiling  *struct {
			Requests   uint64 `json:"requests"`
			ErrorCount uint64 `json:"error_count"`
		} `json:"ceiling"`
		Target struct {
			Target     string `json:"target"`
			Requests   uint64 `json:"requests"`
			Messages   uint64 `json:"messages"`
			ErrorCount uint64 `json:"error_count"`
		} `json:"target"`
		RequestsRatio float64 `json:"requests_ratio"`
	} `json:"results"`
}

// `baton bench --self --ceiling` measures an in-process Baton and the echo
// in one run, alternating in two rounds; a short run checks the wiring,
// not the speed.
func TestBenchSelfCeiling(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{
		"bench", "--self", "--store", "memory", "--ceiling", "--scenario", "send,lifecycle",
		"--duration", "400ms", "--rounds", "2", "--warmup", "0s", "--concurrency", "4", "--body-size", "100", "--json",
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	var rep benchJSON
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if rep.SelfStore != "memory" || !strings.HasPrefix(rep.Endpoint, "http://127.0.0.1:") {
		t.Errorf("endpoint %q, self store %q; want an in-process server on 127.0.0.1 with the memory store", rep.Endpoint, rep.SelfStore)
	}
	if len(rep.Results) != 2 || rep.Results[0].Scenario != "send" || rep.Results[1].Scenario != "lifecycle" {
		t.Fatalf("results %+v, want send then lifecycle", rep.Results)
	}
	for _, r := range rep.Results {
		if r.Ceiling == nil || r.Ceiling.Requests == 0 || r.Ceiling.ErrorCount != 0 {
			t.Errorf("%s: ceiling %+v, want requests and no errors", r.Scenario, r.Ceiling)
		}
		if r.Target.Target != "baton/memory" || r.Target.Messages == 0 || r.Target.ErrorCount != 0 {
			t.Errorf("%s: target %+v, want messages and no errors", r.Scenario, r.Target)
		}
		if r.RequestsRatio <= 0 {
			t.Errorf("%s: requests ratio %v, want a positive ratio", r.Scenario, r.RequestsRatio)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr is not empty with --json:\n%s", stderr.String())
	}
}

func TestBenchTextReport(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{
		"bench", "--self", "--scenario", "send-batch", "--duration", "200ms", "--warmup", "0s", "--concurrency", "2",
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"in-process Baton, store memory", "send-batch: 2 workers", "baton/memory", "req/s", "p99"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}

// Several --endpoint values, comma-separated and repeated, share the
// workers; the report names them all.
func TestBenchSeveralEndpoints(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Clock: clock.System{}})
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	var stdout, stderr bytes.Buffer
	code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{
		"bench", "--endpoint", srv.URL + "," + other, "--endpoint", srv.URL + "/", "--scenario", "send-batch",
		"--duration", "300ms", "--warmup", "0s", "--concurrency", "3", "--json",
	})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	var rep benchJSON
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if want := srv.URL + "," + other + "," + srv.URL; rep.Endpoint != want {
		t.Errorf("endpoint %q, want %q", rep.Endpoint, want)
	}
	if len(rep.Results) != 1 || rep.Results[0].Target.Messages == 0 || rep.Results[0].Target.ErrorCount != 0 {
		t.Errorf("results %+v, want messages and no errors", rep.Results)
	}
}

func TestBenchRefuses(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "--scenario", "nope"},
		{"bench", "--self", "--endpoint", "http://127.0.0.1:9324"},
		{"bench", "--self", "--store", "no-such-store", "--duration", "100ms"},
		{"bench", "--body-size", "0"},
		{"bench", "--access-key-id", "AKID"},
	} {
		var stderr bytes.Buffer
		if code := (cli.Main{Stdout: &bytes.Buffer{}, Stderr: &stderr}).Run(context.Background(), args); code == 0 {
			t.Errorf("%v: exit code 0, want an error", args)
		}
		if !strings.Contains(stderr.String(), "baton:") {
			t.Errorf("%v: stderr %q, want the error", args, stderr.String())
		}
	}
}

// `baton bench` reads BATON_BENCH_<FLAG> (and BATON_ENDPOINT), never
// serve's BATON_<FLAG>: a BATON_STORE naming the server's database must not
// become the store of `bench --self`.
func TestBenchEnvironment(t *testing.T) {
	t.Parallel()
	serveEnv := []string{"BATON_STORE=postgres://baton@127.0.0.1:1/prod", "BATON_DURABILITY=bogus",
		"BATON_ACCESS_KEY_ID=AKID", "BATON_REGION=eu-west-1", "BATON_CONCURRENCY=0", "BATON_SCENARIO=nope"}
	args := []string{"bench", "--self", "--scenario", "send", "--duration", "100ms", "--warmup", "0s", "--concurrency", "1", "--json"}
	r := runCLI(t, cliEnv(t, serveEnv...), nil, args...)
	var rep benchJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.SelfStore != "memory" {
		t.Fatalf("bench --self with serve's BATON_* set: %v\nwant the memory store", r)
	}
	// Its own variables: BATON_BENCH_STORE is --store.
	r = runCLI(t, cliEnv(t, append(serveEnv, "BATON_BENCH_STORE=no-such-store")...), nil, args...)
	if r.code != 1 || !strings.Contains(r.stderr, `--store "no-such-store"`) {
		t.Errorf("bench --self with BATON_BENCH_STORE=no-such-store: %v\nwant exit 1 naming the store", r)
	}
	// The endpoint: BATON_BENCH_ENDPOINT, else BATON_ENDPOINT.
	srv := testutil.StartServer(t, testutil.Options{Clock: clock.System{}})
	for _, env := range [][]string{
		{"BATON_ENDPOINT=" + srv.URL},
		{"BATON_ENDPOINT=http://127.0.0.1:1", "BATON_BENCH_ENDPOINT=" + srv.URL},
	} {
		r = runCLI(t, cliEnv(t, append(serveEnv, env...)...), nil, "bench", "--scenario", "send", "--duration", "100ms",
			"--warmup", "0s", "--concurrency", "1", "--json")
		rep = benchJSON{}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Endpoint != srv.URL {
			t.Errorf("bench with %v: %v\nwant endpoint %s", env, r, srv.URL)
		}
	}
}

// `baton bench --help` names each flag's value type: pflag takes a
// back-quoted word of a flag's usage for that name, so a usage must quote
// nothing with back quotes.
func TestBenchHelp(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	if code := (cli.Main{Stdout: &stdout, Stderr: &bytes.Buffer{}}).Run(context.Background(), []string{"bench", "--help"}); code != 0 {
		t.Fatalf("bench --help: exit code %d", code)
	}
	if out := stdout.String(); !strings.Contains(out, "--store string ") || strings.Contains(out, "`") {
		t.Errorf("bench --help: want \"--store string\" and no back quote in\n%s", out)
	}
}
