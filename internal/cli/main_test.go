package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// The baton binary the CLI tests run: built once, on first use, into a
// directory that TestMain removes.
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

// TestMain only provides and removes binDir; tests that do not run the
// binary do not pay for building it.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// batonBinary builds ./cmd/baton (once per test binary) and returns its path.
// The build has the tests' own time (go test -timeout) and no bound of its
// own: on a fresh clone, with nothing in the build cache and the machine
// busy, compiling the server's dependencies can take minutes.
func batonBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		ctx := context.Background()
		if end, ok := t.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, end)
			defer cancel()
		}
		out := filepath.Join(binDir, "baton")
		// -buildvcs=auto as a plain go build has it, whatever GOFLAGS says,
		// so that TestCLIVersion sees the revision stamped.
		build := exec.CommandContext(ctx, "go", "build", "-buildvcs=auto", "-o", out, "./cmd/baton")
		build.Dir = filepath.Join("..", "..") // go test runs in internal/cli
		if b, err := build.CombinedOutput(); err != nil {
			binError = fmt.Errorf("go build ./cmd/baton: %v\n%s", err, b)
			return
		}
		binPath = out
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// cliEnv is the environment the binary runs in: this process's without any
// AWS_* or BATON_* setting, AWS configuration files that do not exist (so a
// developer's ~/.aws cannot leak in), one attempt per request, then extra.
func cliEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "BATON_")
	})
	env = append(env,
		"AWS_CONFIG_FILE="+filepath.Join(dir, "aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "aws-credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_MAX_ATTEMPTS=1",
	)
	return append(env, extra...)
}

// cliResult is how a run of the binary ended.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runCLI runs the binary with args in env (see cliEnv), stdin as its
// standard input, and waits at most 60 s for it.
func runCLI(t *testing.T, env []string, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	bin := batonBinary(t) // before the 60 s start: the first call builds it
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("baton %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustSucceed runs the binary against endpoint and fails the test unless it
// exits 0; it returns standard output.
func mustSucceed(t *testing.T, endpoint string, args ...string) string {
	t.Helper()
	r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+endpoint), nil, args...)
	if r.code != 0 {
		t.Fatalf("baton %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// mustFail runs the binary against endpoint and fails the test unless it
// exits 1 with want in its standard error; it returns standard error.
func mustFail(t *testing.T, endpoint, want string, args ...string) string {
	t.Helper()
	r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+endpoint), nil, args...)
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("baton %s: %v\nwant exit 1 and %q on stderr", strings.Join(args, " "), r, want)
	}
	return r.stderr
}

// servingAddr matches the line `baton serve` logs once it accepts requests.
var servingAddr = regexp.MustCompile(`baton serving"? addr=(127\.0\.0\.1:[0-9]+)`)

// serveProcess is a running `baton serve`.
type serveProcess struct {
	// URL is http://127.0.0.1:<port>.
	URL  string
	cmd  *exec.Cmd
	logs *logbuf.Buffer
	done chan struct{}
}

// startServe runs `baton serve --listen 127.0.0.1:0 args…` until the test
// ends and returns once it serves /healthz.
func startServe(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{logs: &logbuf.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(batonBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("baton serve output:\n%s", p.logs)
		}
	})
	testutil.CheckFor(t, 30*time.Second, func() error {
		select {
		case <-p.done:
			t.Fatalf("baton serve exited before serving:\n%s", p.logs)
		default:
		}
		m := servingAddr.FindStringSubmatch(p.logs.String())
		if m == nil {
			return fmt.Errorf("no \"baton serving addr=\" line yet")
		}
		p.URL = "http://" + m[1]
		return nil
	})
	testutil.CheckFor(t, 10*time.Second, func() error {
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		return nil
	})
	return p
}

// stop ends the server with SIGTERM, as an operator would, and waits for it.
func (p *serveProcess) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Errorf("baton serve did not exit 30s after SIGINT")
	}
}

// `baton version` and `baton --version` print the version and, for a plain
// go build in a git checkout, the commit it was built from; version takes no
// arguments.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	want := regexp.MustCompile(`^baton dev\n$`)
	// What the toolchain stamped into the binary, as go version -m reads
	// it: the revision when it was built in a git checkout it could read.
	out, err := exec.Command("go", "version", "-m", batonBinary(t)).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	if m := regexp.MustCompile(`(?m)^\s+build\s+vcs\.revision=([0-9a-f]{12})`).FindSubmatch(out); m != nil {
		want = regexp.MustCompile(`^baton \S+ \(` + string(m[1]) + `(\+modified)? [0-9TZ:-]+\)\n$`)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if got := mustSucceed(t, "", args...); !want.MatchString(got) {
			t.Errorf("baton %s: got %q, want a match of %s", args[0], got, want)
		}
	}
	mustFail(t, "", "unknown command \"extra\" for \"baton version\"", "version", "extra")
}

// `baton completion SHELL` prints cobra's completion script.
func TestCLICompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := mustSucceed(t, "", "completion", shell); !strings.Contains(out, "baton") || len(out) < 1000 {
			t.Errorf("baton completion %s: got %d bytes, want a script naming baton", shell, len(out))
		}
	}
	mustFail(t, "", `unknown command "zsh" for "baton completion bash"`, "completion", "bash", "zsh")

	// QUEUE arguments complete to the server's queue names.
	s := testutil.StartServer(t)
	s.MustCreateQueue(t, "jobs", nil)
	s.MustCreateQueue(t, "jobs-dlq", nil)
	s.MustCreateQueue(t, "other", nil)
	if out := mustSucceed(t, s.URL, "__complete", "receive", "jo"); !strings.HasPrefix(out, "jobs\njobs-dlq\n:4\n") {
		t.Errorf("completing `baton receive jo`: got %q, want jobs and jobs-dlq", out)
	}
}

// Help shows a bool flag as plain --flag, not pflag's --flag[=true|false],
// and --flag=false still parses.
func TestCLIHelpBoolFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--help"}, {"receive", "--help"}, {"send", "--help"}, {"queue", "--help"}, {"queue", "create", "--help"},
		{"doctor", "--help"}, {"worker", "--help"}, {"bench", "--help"}, {"--help"},
		{"topic", "subscribe", "--help"}, {"publish", "--help"},
	} {
		r := runCLI(t, cliEnv(t), nil, args...)
		if r.code != 0 || strings.Contains(r.stdout, "[=true|false]") || !strings.Contains(r.stdout, "  -h, --help ") {
			t.Errorf("baton %s: %v\nwant help without [=true|false]", strings.Join(args, " "), r)
		}
	}
	r := runCLI(t, cliEnv(t), nil, "serve", "--help")
	if !strings.Contains(r.stdout, "      --allow-anonymous    ") {
		t.Errorf("serve --help: want --allow-anonymous alone on its line:\n%s", r.stdout)
	}
	r = runCLI(t, cliEnv(t), nil, "serve", "--store", "memory", "--allow-anonymous=false", "--print-config")
	if r.code != 0 || !strings.Contains(r.stdout, "allow-anonymous: false # from --allow-anonymous") {
		t.Errorf("serve --allow-anonymous=false --print-config: %v", r)
	}
}

// A mistyped command, subcommand or flag fails and names the nearest.
func TestCLISuggestions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		// store is as near to sevre as serve is (two letters changed).
		{[]string{"sevre"}, "unknown command \"sevre\" for \"baton\"\n\nDid you mean this?\n\tserve\n\tstore\n"},
		{[]string{"queue", "craete", "jobs"}, "unknown command \"craete\" for \"baton queue\"\n\nDid you mean this?\n\tcreate\n"},
		{[]string{"serve", "--lisen", "127.0.0.1:0"}, "unknown flag: --lisen\n\nDid you mean this?\n\t--listen\n"},
		{[]string{"receive", "jobs", "--delte"}, "unknown flag: --delte\n\nDid you mean this?\n\t--delete\n"},
		{[]string{"queue", "list", "--endpont", "x"}, "unknown flag: --endpont\n\nDid you mean this?\n\t--endpoint\n"},
		{[]string{"serve", "--no-such-thing"}, "unknown flag: --no-such-thing\n"},
		{[]string{"topic", "subscirbe", "t", "q"}, "unknown command \"subscirbe\" for \"baton topic\"\n\nDid you mean this?\n\tsubscribe\n"},
		{[]string{"publish", "t", "m", "--subjet", "s"}, "unknown flag: --subjet\n\nDid you mean this?\n\t--subject\n"},
	} {
		r := runCLI(t, cliEnv(t), nil, tt.args...)
		if r.code != 1 || r.stderr != "baton: "+tt.want {
			t.Errorf("baton %s: %v\nwant exit 1 and stderr %q", strings.Join(tt.args, " "), r, "baton: "+tt.want)
		}
	}
	// A command that groups subcommands, alone, prints its help.
	if r := runCLI(t, cliEnv(t), nil, "queue"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("baton queue: %v\nwant its help", r)
	}
}
