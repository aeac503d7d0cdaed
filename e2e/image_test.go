package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestReleaseAndImage runs the release build as a maintainer would on a tag
// (deploy/release.sh --dry-run, for this machine's linux architecture and
// darwin/arm64, so that CI stays quick), checks its checksums and SBOMs, and
// then runs the image it built as a user would with podman: it serves an
// AWS SDK, keeps its queues in its volume across a restart, stops cleanly
// on SIGTERM and reports healthy through its own HEALTHCHECK; and
// deploy/compose.yaml runs the same image with podman-compose. It builds
// Baton twice more, minutes on a 2-core machine, so it runs only with
// BATON_IMAGE_TEST=1: .ci/run runs it on its own after the README's test
// command. Without podman and podman-compose it is skipped, or failed when
// BATON_REQUIRE_CONTAINERS=1 (as CI sets it).
func TestReleaseAndImage(t *testing.T) {
	if os.Getenv("BATON_IMAGE_TEST") != "1" {
		skipnote.Skip(t, "BATON_IMAGE_TEST=1", "builds the release and the container image (minutes); set BATON_IMAGE_TEST=1, as .ci/run does")
	}
	t.Parallel()
	needContainerTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	name := fmt.Sprintf("baton-e2e-%d", time.Now().UnixNano())
	out := t.TempDir()
	began := time.Now()
	rel := exec.CommandContext(ctx, "deploy/release.sh", "--dry-run", "--out", out,
		"--targets", "linux/"+runtime.GOARCH+" darwin/arm64", "--image", "localhost/"+name)
	rel.Dir = moduleRoot
	rel.Env = goBuildEnv()
	b, err := rel.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/release.sh --dry-run: %v\n%s", err, b)
	}
	t.Logf("deploy/release.sh --dry-run took %s:\n%s", time.Since(began).Round(time.Second), b)
	m := regexp.MustCompile(`(?m)^release (\S+) into`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("release.sh printed no version:\n%s", b)
	}
	version := string(m[1])
	image := "localhost/" + name + ":" + version + "-" + runtime.GOARCH
	t.Cleanup(func() {
		podman(t, "manifest", "rm", "localhost/"+name+":"+version)
		podman(t, "rmi", "-f", image)
	})
	checkReleaseFiles(t, out, version)
	checkReleaseWithoutImages(ctx, t)

	env := podmanEnv(t, image)
	checkImageServes(t, env, name, image)
	checkHealthFollowsListen(t, env, name, image)
	checkCompose(t, env, name, image)
}

// checkHealthFollowsListen runs the image with a --listen on the command
// line, which BATON_LISTEN does not say, and checks the image's
// HEALTHCHECK finds the server there (baton serve's health file), and
// that the start-up line gives the address the check asks, one a user
// inside the container can paste (not the [::] Go reports of a listener
// on 0.0.0.0).
func checkHealthFollowsListen(t *testing.T, env []string, name, image string) {
	name += "-listen"
	mustPodman(t, env, "run", "-d", "--name", name, "-e", "BATON_ALLOW_ANONYMOUS=true", image,
		"serve", "--listen", "0.0.0.0:4566", "--store", "memory")
	t.Cleanup(func() { podman(t, "rm", "-f", "-t", "0", name) })
	testutil.CheckFor(t, time.Minute, func() error {
		if b, err := podmanCmd(env, "healthcheck", "run", name).CombinedOutput(); err != nil {
			return fmt.Errorf("podman healthcheck run of a container serving --listen 0.0.0.0:4566: %v\n%s", err, b)
		}
		return nil
	})
	logs, err := podmanCmd(env, "logs", name).CombinedOutput()
	if err != nil {
		t.Fatalf("podman logs %s: %v\n%s", name, err, logs)
	}
	if !strings.Contains(string(logs), " endpoint=http://127.0.0.1:4566 ") {
		t.Errorf("the start-up line of --listen 0.0.0.0:4566 gives no endpoint=http://127.0.0.1:4566:\n%s", logs)
	}
}

// checkReleaseWithoutImages runs deploy/release.sh --dry-run --no-images,
// as docs/container.md shows it, for this machine's linux (a build the
// release above cached): it builds and checks the binaries and ends with
// whole instructions (it ended "…to the release, and", the image step
// left out).
func checkReleaseWithoutImages(ctx context.Context, t *testing.T) {
	rel := exec.CommandContext(ctx, "deploy/release.sh", "--dry-run", "--out", t.TempDir(),
		"--targets", "linux/"+runtime.GOARCH, "--no-images")
	rel.Dir = moduleRoot
	rel.Env = goBuildEnv()
	b, err := rel.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/release.sh --dry-run --no-images: %v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "To publish ") || !strings.HasSuffix(last, " to the release.") {
		t.Errorf("deploy/release.sh --dry-run --no-images ends %q, want the upload instruction as a whole sentence:\n%s", last, b)
	}
}

// needContainerTools skips the test without podman and podman-compose, or
// fails it when BATON_REQUIRE_CONTAINERS=1.
func needContainerTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"podman", "podman-compose"} {
		if out, err := exec.Command(tool, "--version").CombinedOutput(); err != nil {
			msg := fmt.Sprintf("%s is not usable (%v: %s)", tool, err, strings.TrimSpace(string(out)))
			if os.Getenv("BATON_REQUIRE_CONTAINERS") == "1" {
				t.Fatalf("%s and BATON_REQUIRE_CONTAINERS=1 requires it", msg)
			}
			skipnote.Skip(t, "podman", "%s; set BATON_REQUIRE_CONTAINERS=1 to fail instead", msg)
		}
	}
}

// goBuildEnv is this process's environment for a go build of the module's
// own: without test flags (GOFLAGS=-count=1 means nothing to go build).
func goBuildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	return env
}

// checkReleaseFiles checks what release.sh wrote: two binaries, each with an
// SBOM, all in SHA256SUMS with the right sums, the linux SBOM naming the
// modules Baton links in.
func checkReleaseFiles(t *testing.T, out, version string) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sums), "\n"); n != 4 {
		t.Fatalf("SHA256SUMS has %d lines, want 4 (two binaries, two SBOMs):\n%s", n, sums)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, b)
	}
	sbom, err := os.ReadFile(filepath.Join(out, "baton_"+version+"_linux_"+runtime.GOARCH+".spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(sbom, &doc); err != nil {
		t.Fatalf("the SBOM is not JSON: %v", err)
	}
	found := map[string]string{}
	for _, p := range doc.Packages {
		found[p.Name] = p.VersionInfo
	}
	for _, mod := range []string{"github.com/baton-sqs/baton", "stdlib", "github.com/cockroachdb/pebble/v2", "github.com/aws/aws-sdk-go-v2/service/sqs"} {
		if found[mod] == "" {
			t.Errorf("the SBOM (%s) lists no %s", doc.SPDXVersion, mod)
		}
	}
}

// podmanEnv is the environment podman and podman-compose run in. Where the
// image does not start with podman's defaults, it adds the settings that
// let it (and logs them): a sandbox without CAP_SYS_RESOURCE cannot raise
// the open-file and process limits podman gives a container by default,
// and crun 1.8 refuses a hybrid cgroup v1 hierarchy, where runc does not.
func podmanEnv(t *testing.T, image string) []string {
	t.Helper()
	env := os.Environ()
	if b, err := podmanCmd(env, "run", "--rm", image, "version").CombinedOutput(); err == nil {
		return env
	} else {
		t.Logf("podman run with its defaults failed (%v: %s); retrying with runc and the limits this process has", err, strings.TrimSpace(string(b)))
	}
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "containers.conf")
	text := fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=%d:%d\", \"nproc=4096:4096\"]\n[engine]\nruntime = \"runc\"\n", nofile.Cur, nofile.Cur)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(env, "CONTAINERS_CONF="+conf)
	if b, err := podmanCmd(env, "run", "--rm", image, "version").CombinedOutput(); err != nil {
		t.Fatalf("podman run %s version, with runc and %s: %v\n%s", image, text, err, b)
	}
	t.Logf("podman runs the image with CONTAINERS_CONF:\n%s", text)
	return env
}

func podmanCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("podman", args...)
	cmd.Env = env
	return cmd
}

// podman runs a clean-up command, logging a failure.
func podman(t *testing.T, args ...string) {
	if b, err := exec.Command("podman", args...).CombinedOutput(); err != nil {
		t.Logf("podman %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// mustPodman runs podman and returns its standard output, failing the test
// on an error.
func mustPodman(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := podmanCmd(env, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s%s", strings.Join(args, " "), err, b, stderr.String())
	}
	return strings.TrimSpace(string(b))
}

// checkImageServes runs the image in a container with a named volume and
// checks it serves, persists across a restart and stops cleanly.
func checkImageServes(t *testing.T, env []string, name, image string) {
	volume := name + "-data"
	mustPodman(t, env, "volume", "create", volume)
	t.Cleanup(func() { podman(t, "volume", "rm", "-f", volume) })
	mustPodman(t, env, "run", "-d", "--name", name, "-p", "127.0.0.1::9324", "-v", volume+":/data",
		"-e", "BATON_ALLOW_ANONYMOUS=true", image)
	t.Cleanup(func() { podman(t, "rm", "-f", "-t", "0", name) })
	if user := mustPodman(t, env, "inspect", "--format", "{{.Config.User}}", name); user != "10001:10001" {
		t.Errorf("the container runs as %q, want the unprivileged 10001:10001", user)
	}

	endpoint := containerEndpoint(t, env, name)
	waitHealthy(t, endpoint)
	// The image's HEALTHCHECK (`baton health`, run inside the container).
	if b, err := podmanCmd(env, "healthcheck", "run", name).CombinedOutput(); err != nil {
		t.Errorf("podman healthcheck run: %v\n%s", err, b)
	}
	client := testutil.NewClient(endpoint)
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("kept")})
	if err != nil {
		t.Fatalf("CreateQueue through the container: %v", err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("kept across a restart")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}

	stopped := time.Now()
	mustPodman(t, env, "stop", "-t", "30", name)
	took := time.Since(stopped)
	state := mustPodman(t, env, "inspect", "--format", "{{.State.ExitCode}} {{.State.OOMKilled}}", name)
	logs, _ := podmanCmd(env, "logs", name).CombinedOutput()
	if state != "0 false" || !strings.Contains(string(logs), `msg="shutting down"`) {
		t.Fatalf("after SIGTERM: exit code and OOM %q, want 0 with \"shutting down\" logged:\n%s", state, logs)
	}
	// Baton bounds its shutdown at 25 s; podman would SIGKILL at 30 s.
	if took > 28*time.Second {
		t.Errorf("podman stop took %s: SIGTERM did not end Baton before the grace period", took)
	}
	t.Logf("podman stop (SIGTERM): exit 0 after %s", took.Round(time.Millisecond))

	mustPodman(t, env, "start", name)
	endpoint = containerEndpoint(t, env, name)
	waitHealthy(t, endpoint)
	client = testutil.NewClient(endpoint)
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("kept")})
	if err != nil {
		t.Fatalf("GetQueueUrl after the restart: %v (the queue was not kept in the volume)", err)
	}
	r, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: got.QueueUrl, WaitTimeSeconds: 5})
	if err != nil || len(r.Messages) != 1 || aws.ToString(r.Messages[0].Body) != "kept across a restart" {
		t.Fatalf("ReceiveMessage after the restart: %+v, %v; want the message sent before it", r, err)
	}
	mustPodman(t, env, "stop", "-t", "30", name)
}

// checkCompose runs deploy/compose.yaml with podman-compose on the image,
// checks it serves and takes it down with its volume.
func checkCompose(t *testing.T, env []string, name, image string) {
	port := freePorts(t, 1)[0]
	project := name + "-compose"
	env = append(env, "BATON_IMAGE="+image, "BATON_PORT="+strconv.Itoa(port))
	compose := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("podman-compose", append([]string{"-p", project, "-f", filepath.Join(moduleRoot, "deploy", "compose.yaml")}, args...)...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman-compose %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	t.Cleanup(func() {
		cmd := exec.Command("podman-compose", "-p", project, "-f", filepath.Join(moduleRoot, "deploy", "compose.yaml"), "down", "-v", "-t", "30")
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Logf("podman-compose down: %v\n%s", err, b)
		}
	})
	compose("up", "-d")
	container := project + "_baton_1"
	if used := mustPodman(t, env, "inspect", "--format", "{{.ImageName}}", container); used != image {
		t.Errorf("compose runs image %q, want the one built, %q", used, image)
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, endpoint)
	client := testutil.NewClient(endpoint)
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("compose")})
	if err != nil {
		t.Fatalf("CreateQueue through compose: %v", err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("via compose")}); err != nil {
		t.Fatal(err)
	}
	r, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 5})
	if err != nil || len(r.Messages) != 1 || aws.ToString(r.Messages[0].Body) != "via compose" {
		t.Fatalf("ReceiveMessage through compose: %+v, %v", r, err)
	}
	compose("down", "-v", "-t", "30")
	if exit := mustPodman(t, env, "ps", "-a", "--filter", "name="+container, "--format", "{{.Names}}"); exit != "" {
		t.Errorf("after compose down, podman still lists %s", exit)
	}
}

// containerEndpoint is the URL of the host port podman published the
// container's 9324 on.
func containerEndpoint(t *testing.T, env []string, name string) string {
	t.Helper()
	addr := mustPodman(t, env, "port", name, "9324/tcp")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("podman port %s 9324/tcp: %q", name, addr)
	}
	return "http://" + addr
}

// waitHealthy polls GET /healthz until it answers 200.
func waitHealthy(t *testing.T, endpoint string) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	testutil.CheckFor(t, time.Minute, func() error {
		resp, err := hc.Get(endpoint + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		return nil
	})
}
