package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/ids"
)

// benchOptions are `baton bench`'s flags.
type benchOptions struct {
	endpoints         []string
	self              bool
	store             string
	ceiling           bool
	scenarios         string
	concurrency       int
	duration          time.Duration
	warmup            time.Duration
	bodySize          int
	queue             string
	keep              bool
	asJSON            bool
	region            string
	accessKeyID       string
	secretAccessKey   string
	visibilityTimeout int
	maxRequests       int64
	cpuProfile        string
	rounds            int
	durability        string
}

// benchCommand is `baton bench`: the load generator.
func benchCommand() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure an SQS endpoint's throughput and latency",
		Long: "Drive an SQS-compatible endpoint with load and report requests and messages per second,\n" +
			"latency percentiles (p50/p90/p99/max) and errors by code. Requests are SQS JSON 1.0 bodies built\n" +
			"once and sent over keep-alive connections; they are signed (SigV4) when --access-key-id and\n" +
			"--secret-access-key or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set, and otherwise carry a\n" +
			"placeholder signature, as a server without authentication accepts.\n\n" +
			"Several endpoints (--endpoint a,b,c or the flag repeated), such as the nodes of one Baton sharing\n" +
			"a PostgreSQL database, share the load: the workers are spread across them round-robin, and the\n" +
			"queue is set up through the first.\n\n" +
			"Scenarios (--scenario, comma-separated, or all):\n" +
			"  send              one message per SendMessage\n" +
			"  send-batch        ten messages per SendMessageBatch\n" +
			"  lifecycle         SendMessageBatch, ReceiveMessage of 10 with a long poll, DeleteMessageBatch;\n" +
			"                    a message counts once deleted\n" +
			"  longpoll-latency  time from a send's response to a waiting receiver's response, at low load\n" +
			"                    (--concurrency receivers)\n" +
			"  lease-expiry      how late after its lease's deadline (--visibility-timeout) a message that\n" +
			"                    was received and not deleted is handed out again (--concurrency queues)\n" +
			"  publish-1, publish-5, publish-20\n" +
			"                    one SNS Publish (Query protocol, signed for sns) per request to a topic with\n" +
			"                    1, 5 or 20 subscribed queues (enveloped); a publish is answered once every\n" +
			"                    copy is durable, and counts one message per queue\n" +
			"  receive-delete    ReceiveMessage of 10 (1 s long poll) and DeleteMessageBatch, sending nothing:\n" +
			"                    works off the queue's backlog (fill it first: --scenario send-batch --keep)\n" +
			"                    and ends when the queue runs out; not part of all\n\n" +
			"--self starts a Baton in this process on 127.0.0.1 (--store, a temporary data directory) and\n" +
			"measures it. --ceiling also measures, in the same run and with the same client, a bare JSON echo\n" +
			"server that decodes each request and encodes a response of the same shape with encoding/json and\n" +
			"does nothing else, and prints the server's figures as a ratio of it: the machine's noise cancels\n" +
			"out of the ratio, the more so with --rounds, which alternates the two. With --self both servers run\n" +
			"in this process, and the ratios are also computed from the process's CPU time per request, which\n" +
			"other programs on a busy machine disturb far less than the rates. The queue (--queue) is created if\n" +
			"missing and deleted afterwards (or purged, if it existed) unless --keep.\n\n" +
			"Every flag can also be set as a BATON_BENCH_<FLAG> environment variable (for example\n" +
			"BATON_BENCH_DURATION=30s); a flag on the command line wins. --endpoint also comes from\n" +
			"AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL or BATON_ENDPOINT, as for the other client commands.\n" +
			"baton serve's BATON_<FLAG> variables (BATON_STORE, BATON_DURABILITY, BATON_REGION,\n" +
			"BATON_ACCESS_KEY_ID…) are not read: --self never measures the server's store unless told to\n" +
			"with --store.",
		Example: "  baton bench --self --ceiling --scenario send,lifecycle\n" +
			"  baton bench --self --store memory --scenario all --json > bench.json\n" +
			"  baton bench --endpoint http://127.0.0.1:9324 --scenario send-batch --concurrency 64 --duration 30s\n" +
			"  baton bench --endpoint http://10.0.0.1:9324,http://10.0.0.2:9324,http://10.0.0.3:9324 --scenario lifecycle",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv, err := commandEnvDefaults(cmd.Flags(), "bench", nil)
			if err != nil {
				return err
			}
			if err := checkRegion(strings.ToLower(o.resolvedRegion())); err != nil {
				return fmt.Errorf("--region (or AWS_REGION, AWS_DEFAULT_REGION): %w", err)
			}
			if fromEnv["endpoint"] == "" && !cmd.Flags().Changed("endpoint") {
				// The variables every client command reads.
				o.endpoints = []string{resolveEndpoint("", "", "")}
			}
			return runBench(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.endpoints, "endpoint", []string{defaultEndpoint},
		"URL of the SQS endpoint to measure; several (comma-separated, or the flag repeated) get the workers round-robin (env BATON_BENCH_ENDPOINT, else AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, BATON_ENDPOINT)")
	f.BoolVar(&o.self, "self", false, "start a Baton in this process on 127.0.0.1 and measure it instead of --endpoint")
	f.StringVar(&o.store, "store", "memory", "store of the --self server: memory, or a durable store that baton serve --store accepts")
	f.StringVar(&o.durability, "durability", "full", "commits of a --self embedded store: full (fsync each commit) or relaxed")
	f.BoolVar(&o.ceiling, "ceiling", false, "also measure an in-process JSON echo server and report the ratio to it")
	f.StringVar(&o.scenarios, "scenario", bench.ScenarioSend, "scenarios, comma-separated: "+strings.Join(slices.Concat(bench.Scenarios, bench.BacklogScenarios), ", ")+", or all")
	f.IntVar(&o.concurrency, "concurrency", 0, "workers (connections; longpoll-latency: receivers; lease-expiry: queues); 0: 32, or 4 for the latency scenarios")
	f.DurationVar(&o.duration, "duration", 10*time.Second, "how long each scenario is measured")
	f.DurationVar(&o.warmup, "warmup", time.Second, "load before measuring starts, not counted")
	f.IntVar(&o.bodySize, "body-size", 1024, "message body size in bytes")
	f.StringVar(&o.queue, "queue", "", "queue name (default baton-bench-<random>; with several scenarios, suffixed -<scenario>)")
	f.BoolVar(&o.keep, "keep", false, "leave the queues as they are after the run")
	f.BoolVar(&o.asJSON, "json", false, "print the results as JSON (and no progress line)")
	f.StringVar(&o.region, "region", "", "region to sign for (default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1)")
	f.StringVar(&o.accessKeyID, "access-key-id", "", "access key id to sign requests with (default: AWS_ACCESS_KEY_ID)")
	f.StringVar(&o.secretAccessKey, "secret-access-key", "",
		"secret of --access-key-id (default: AWS_SECRET_ACCESS_KEY; prefer the environment: a flag shows in the process list)")
	f.IntVar(&o.visibilityTimeout, "visibility-timeout", 1, "lease-expiry: the short visibility timeout, in seconds")
	f.Int64Var(&o.maxRequests, "max-requests", bench.DefaultMaxRequests, "stop a scenario after this many requests")
	f.IntVar(&o.rounds, "rounds", 1, "alternate the ceiling and the server this many times per scenario, splitting --duration, and add the rounds up")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process while the server is measured (FILE, or FILE.<scenario> for several)")
	return cmd
}

// credentials are the flags' key, else the AWS environment's, else none.
func (o benchOptions) credentials() (*bench.Credentials, error) {
	switch {
	case o.accessKeyID != "" && o.secretAccessKey != "":
		return &bench.Credentials{AccessKeyID: o.accessKeyID, SecretAccessKey: o.secretAccessKey}, nil
	case o.accessKeyID != "" || o.secretAccessKey != "":
		return nil, errors.New("--access-key-id and --secret-access-key go together")
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id != "" && secret != "" {
		return &bench.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, nil
	}
	return nil, nil
}

func (o benchOptions) resolvedRegion() string {
	for _, r := range []string{o.region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r
		}
	}
	return "us-east-1"
}

// scenarioList parses --scenario.
func (o benchOptions) scenarioList() ([]string, error) {
	if o.scenarios == "all" {
		return bench.Scenarios, nil
	}
	var out []string
	for _, s := range strings.Split(o.scenarios, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(bench.Scenarios, s) && !slices.Contains(bench.BacklogScenarios, s) {
			return nil, fmt.Errorf("--scenario %q: want %s, or all", s, strings.Join(slices.Concat(bench.Scenarios, bench.BacklogScenarios), ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// benchReport is `baton bench --json`'s output.
type benchReport struct {
	Endpoint string              `json:"endpoint"`
	Self     string              `json:"self_store,omitempty"`
	CPUs     int                 `json:"cpus"`
	Go       string              `json:"go"`
	Version  string              `json:"version"`
	Results  []*bench.Comparison `json:"results"`
}

// runBench is `baton bench`: it checks the flags, starts what is measured
// (the in-process server with --self, the echo server with --ceiling), then
// runs the scenarios one after the other and reports each as text as it
// ends, or all as JSON at the end.
func runBench(cmd *cobra.Command, o benchOptions) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	scenarios, creds, err := o.check()
	if err != nil {
		return err
	}
	r := &benchRun{o: o, several: len(scenarios) > 1, creds: creds, stdout: stdout, stderr: stderr}
	stopTarget, err := r.startTarget(ctx, cmd.Flags().Changed("endpoint"))
	if err != nil {
		return err
	}
	defer stopTarget()
	if o.ceiling {
		var stop func()
		r.ceilingURL, stop, err = bench.StartEcho(o.bodySize)
		if err != nil {
			return err
		}
		defer stop()
	}
	defer r.closeClients()

	report := benchReport{Endpoint: r.endpoint(), CPUs: runtime.GOMAXPROCS(0), Go: runtime.Version(), Version: Version}
	if o.self {
		report.Self = o.store
	}
	if !o.asJSON {
		r.writeHeader(report)
	}
	if !o.asJSON && isTerminal(stderr) {
		r.progress = func(p bench.Progress) { fmt.Fprintf(stderr, "\r%s\x1b[K", p.ProgressLine()) }
	}
	for _, sc := range scenarios {
		cmp, err := r.scenario(ctx, sc)
		if err != nil {
			return err
		}
		report.Results = append(report.Results, cmp)
		if !o.asJSON {
			fmt.Fprintln(stdout)
			if err := cmp.WriteText(stdout); err != nil {
				return err
			}
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return nil
}

// check refuses flags out of range before anything starts, and returns the
// scenarios to run and the credentials to sign with. It names the queue
// when --queue does not, once for the whole run, so that every scenario's
// queue shares the random part.
func (o *benchOptions) check() (scenarios []string, creds *bench.Credentials, err error) {
	scenarios, err = o.scenarioList()
	if err != nil {
		return nil, nil, err
	}
	if o.duration <= 0 || o.warmup < 0 {
		return nil, nil, errors.New("--duration must be positive and --warmup not negative")
	}
	if o.rounds < 1 || o.rounds > 100 {
		return nil, nil, errors.New("--rounds must be between 1 and 100")
	}
	if o.bodySize < 1 || o.bodySize > 1<<20 {
		return nil, nil, errors.New("--body-size must be between 1 and 1048576")
	}
	creds, err = o.credentials()
	if err != nil {
		return nil, nil, err
	}
	if o.queue == "" {
		o.queue = fmt.Sprintf("baton-bench-%06x", ids.NewUint64()&0xffffff)
	}
	return scenarios, creds, nil
}

// benchRun is what the scenarios of one `baton bench` share: the options,
// the endpoints measured and the ceiling's, the progress line, and the
// clients made for the scenarios, which stay open until the run ends.
type benchRun struct {
	o              benchOptions
	several        bool // more than one scenario: each gets a queue and profile of its own
	creds          *bench.Credentials
	stdout, stderr io.Writer
	progress       func(bench.Progress)

	endpoints  []string
	label      string // the target's name in the results
	ceilingURL string
	clients    []*bench.Client
}

// startTarget starts the in-process server with --self, or else takes the
// --endpoint list, and returns what stops the server (nothing to stop for
// endpoints). endpointSet says --endpoint was given, which --self excludes.
func (r *benchRun) startTarget(ctx context.Context, endpointSet bool) (stop func(), err error) {
	if !r.o.self {
		r.endpoints, r.label, err = parseEndpoints(r.o.endpoints)
		return func() {}, err
	}
	if endpointSet {
		return nil, errors.New("--self and --endpoint exclude each other")
	}
	endpoint, stop, err := startSelf(ctx, r.o.store, r.o.durability, r.creds, r.stderr)
	if err != nil {
		return nil, err
	}
	r.endpoints, r.label = []string{endpoint}, "baton/"+r.o.store
	return stop, nil
}

// parseEndpoints reads --endpoint: each URL gets http:// if it names no
// scheme and loses a trailing slash; empty entries are skipped, but one
// endpoint at least is needed. label joins their hosts, to name the target.
func parseEndpoints(list []string) (endpoints []string, label string, err error) {
	var hosts []string
	for _, endpoint := range list {
		endpoint = strings.TrimSpace(endpoint)
		if endpoint == "" {
			continue
		}
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
		endpoint = strings.TrimRight(endpoint, "/")
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, "", fmt.Errorf("--endpoint: %w", err)
		}
		endpoints, hosts = append(endpoints, endpoint), append(hosts, u.Host)
	}
	if len(endpoints) == 0 {
		return nil, "", errors.New("--endpoint: no endpoint given")
	}
	return endpoints, strings.Join(hosts, ","), nil
}

// endpoint is the target's endpoints as the report names them.
func (r *benchRun) endpoint() string { return strings.Join(r.endpoints, ",") }

// writeHeader prints the line that says, before the first result, what is
// measured and on what.
func (r *benchRun) writeHeader(report benchReport) {
	fmt.Fprintf(r.stdout, "baton bench %s: %s", Version, report.Endpoint)
	if r.o.self {
		fmt.Fprintf(r.stdout, " (in-process Baton, store %s)", r.o.store)
	}
	if r.o.ceiling {
		fmt.Fprintf(r.stdout, "; ceiling: JSON echo on %s", r.ceilingURL)
	}
	fmt.Fprintf(r.stdout, "; %d CPUs, %s\n", report.CPUs, report.Go)
}

// newClient makes a client of endpoint ep with conns connections, to be
// closed when the run ends.
func (r *benchRun) newClient(ep string, conns int) (*bench.Client, error) {
	c, err := bench.NewClient(bench.ClientConfig{Endpoint: ep, Region: r.o.resolvedRegion(), Credentials: r.creds, Conns: conns})
	if err != nil {
		return nil, err
	}
	r.clients = append(r.clients, c)
	return c, nil
}

// closeClients closes the clients, the newest first.
func (r *benchRun) closeClients() {
	for i := len(r.clients) - 1; i >= 0; i-- {
		r.clients[i].Close()
	}
}

// scenario measures scenario sc: --rounds times, the ceiling (where it has
// one) then the target, each round on a queue of its own, and compares the
// rounds added up. If a round of the target fails after some were
// measured, what was measured is shown before the error.
func (r *benchRun) scenario(ctx context.Context, sc string) (*bench.Comparison, error) {
	o := r.o
	concurrency := o.concurrency
	if concurrency <= 0 {
		concurrency = bench.DefaultConcurrency(sc)
	}
	cfg := bench.Config{
		Scenario: sc, Concurrency: concurrency, Duration: o.duration / time.Duration(o.rounds), Warmup: o.warmup,
		BodySize: o.bodySize, Keep: o.keep, MaxRequests: o.maxRequests, VisibilityTimeout: o.visibilityTimeout,
		ProgressFunc: r.progress,
	}
	queue := o.queue
	if r.several {
		queue += "-" + sc
	}
	ceilingClient, targetClients, err := r.scenarioClients(sc, concurrency)
	if err != nil {
		return nil, err
	}
	var ceilings, targets []*bench.Result
	for round := 1; round <= o.rounds; round++ {
		cfg.Queue = queue
		if o.rounds > 1 {
			cfg.Queue = fmt.Sprintf("%s-r%d", queue, round)
		}
		if ceilingClient != nil {
			res, err := r.measureCeiling(ctx, cfg, ceilingClient)
			if err != nil {
				return nil, fmt.Errorf("%s against the ceiling: %w", sc, err)
			}
			ceilings = append(ceilings, res)
		}
		stopProfile, err := startProfile(o.cpuProfile, sc, r.several, round, o.rounds)
		if err != nil {
			return nil, err
		}
		res, err := r.measureTarget(ctx, cfg, targetClients, stopProfile)
		if res != nil {
			targets = append(targets, res)
		}
		if err != nil {
			if len(targets) > 0 && !o.asJSON { // interrupted: show what was measured
				bench.Compare(bench.MergeResults(ceilings...), bench.MergeResults(targets...)).WriteText(r.stdout)
			}
			return nil, fmt.Errorf("%s: %w", sc, err)
		}
	}
	return bench.Compare(bench.MergeResults(ceilings...), bench.MergeResults(targets...)), nil
}

// scenarioClients makes the clients of scenario sc with concurrency
// workers: the ceiling's, with --ceiling where the scenario has one (else
// nil), and one for each endpoint of the target.
func (r *benchRun) scenarioClients(sc string, concurrency int) (ceiling *bench.Client, targets []*bench.Client, err error) {
	if r.o.ceiling && bench.HasCeiling(sc) {
		if ceiling, err = r.newClient(r.ceilingURL, concurrency); err != nil {
			return nil, nil, err
		}
	}
	// Each endpoint's client keeps enough connections for the workers
	// it gets round-robin.
	for i, ep := range r.endpoints {
		c, err := r.newClient(ep, (concurrency-i+len(r.endpoints)-1)/len(r.endpoints))
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, c)
	}
	return ceiling, targets, nil
}

// measureCeiling runs one round of cfg against the in-process echo server.
func (r *benchRun) measureCeiling(ctx context.Context, cfg bench.Config, c *bench.Client) (*bench.Result, error) {
	cfg.Client, cfg.Clients, cfg.Target, cfg.InProcess = c, nil, "ceiling", true
	res, err := bench.Run(ctx, cfg)
	clearProgress(r.stderr, r.progress)
	return res, err
}

// measureTarget runs one round of cfg against the target, its workers
// spread over the clients round-robin, and then stops the round's CPU
// profile. A round cut short returns what it measured with the error.
func (r *benchRun) measureTarget(ctx context.Context, cfg bench.Config, clients []*bench.Client, stopProfile func()) (*bench.Result, error) {
	cfg.Client, cfg.Target, cfg.InProcess = clients[0], r.label, r.o.self
	if len(clients) > 1 {
		cfg.Clients = clients
	}
	res, err := bench.Run(ctx, cfg)
	stopProfile()
	clearProgress(r.stderr, r.progress)
	return res, err
}

func clearProgress(w io.Writer, progress func(bench.Progress)) {
	if progress != nil {
		fmt.Fprint(w, "\r\x1b[K")
	}
}

// startProfile starts a CPU profile into file (suffixed .<scenario> when
// several scenarios run, and .<round> with several rounds) and returns its
// stop; without a file it does nothing.
func startProfile(file, scenario string, several bool, round, rounds int) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	if several {
		file += "." + scenario
	}
	if rounds > 1 {
		file += "." + strconv.Itoa(round)
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startSelf runs `baton serve` in this process on 127.0.0.1 with the given
// store (and durability, for the embedded store) and a temporary data directory, requiring creds' signature if set,
// and returns its URL and a stop that shuts it down and removes the
// directory. Its warnings and errors go to logs.
func startSelf(ctx context.Context, store, durability string, creds *bench.Credentials, logs io.Writer) (endpoint string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "baton-bench-")
	if err != nil {
		return "", nil, err
	}
	cfg := ServeConfig{
		Listen: "127.0.0.1:0", DataDir: dir, Store: store, Durability: durability, AccountID: "000000000000", Region: "us-east-1",
		LogLevel: "warn", Logs: logs,
	}
	if creds != nil {
		cfg.AccessKeyID, cfg.SecretAccessKey = creds.AccessKeyID, creds.SecretAccessKey
	}
	endpoint, stop, err = ServeInProcess(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("--self: %w", err)
	}
	return endpoint, stop, nil
}

// ServeInProcess runs `baton serve` with cfg in this process until the
// returned stop, which shuts it down and removes cfg.DataDir; it returns
// once the server listens, with its URL. For benchmarks that measure a
// Baton beside something else (`baton bench --self`, bench/river).
func ServeInProcess(ctx context.Context, cfg ServeConfig) (endpoint string, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, cfg, ready) }()
	select {
	case addr := <-ready:
		return "http://" + addr, func() {
			cancel()
			<-errc
			os.RemoveAll(cfg.DataDir)
		}, nil
	case err := <-errc:
		cancel()
		os.RemoveAll(cfg.DataDir)
		return "", nil, err
	}
}
