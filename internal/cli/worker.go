package cli

// `baton worker`: Lambda's SQS trigger without Lambda (package worker).
//
// One mapping comes from the flags; several from a YAML file
// (--config FILE), whose mapping keys are the mapping flags' names:
//
//	endpoint: http://127.0.0.1:9324
//	log-level: info
//	mappings:
//	  - queue-url: jobs
//	    http: http://127.0.0.1:8080/jobs
//	    batch-size: 100
//	    batching-window: 5s
//	    report-batch-item-failures: true
//	  - queue-url: thumbnails
//	    command: ./thumbnail.sh
//	    stall-timeout: 30s

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/worker"
)

// mappingSpec is one mapping as the flags and the --config file spell it:
// each yaml key is the flag's name.
type mappingSpec struct {
	QueueURL                string        `yaml:"queue-url"`
	HTTP                    string        `yaml:"http"`
	Command                 string        `yaml:"command"`
	PerMessage              bool          `yaml:"per-message"`
	ContentType             string        `yaml:"content-type"`
	Headers                 []string      `yaml:"header"`
	BatchSize               int           `yaml:"batch-size"`
	BatchingWindow          time.Duration `yaml:"batching-window"`
	MaxPayload              byteSize      `yaml:"max-payload"`
	MaxConcurrency          int           `yaml:"max-concurrency"`
	TargetTimeout           time.Duration `yaml:"target-timeout"`
	StallTimeout            time.Duration `yaml:"stall-timeout"`
	KillGrace               time.Duration `yaml:"kill-grace"`
	ReportBatchItemFailures bool          `yaml:"report-batch-item-failures"`
	VisibilityTimeout       time.Duration `yaml:"visibility-timeout"`

	// source names, for each setting given explicitly (a flag's name or
	// a key), how it was given, for errors: "--batch-size",
	// "BATON_WORKER_BATCH_SIZE" or "batch-size:" (a --config file's key).
	// A setting missing from it has its default.
	source map[string]string
}

// setting names setting key with value v as the user gave it, for an error.
func (s *mappingSpec) setting(key string, v any) string {
	switch src := s.source[key]; {
	case src == "" || strings.HasPrefix(src, "--"):
		return fmt.Sprintf("--%s %v", key, v)
	case strings.HasSuffix(src, ":"):
		return fmt.Sprintf("%s %v", src, v)
	default:
		return fmt.Sprintf("%s=%v", src, v)
	}
}

// checkRanges refuses a setting outside its documented range. The CLI never
// hands worker.Config a zero that the library would replace by its default:
// an explicit 0 is either meaningful (--batching-window, --stall-timeout)
// or refused here.
func (s *mappingSpec) checkRanges() error {
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("%s: must be %s", s.setting(key, v), want)
	}
	_, visibilityGiven := s.source["visibility-timeout"]
	switch {
	case s.BatchSize < 1 || s.BatchSize > worker.MaxBatchSize:
		return bad("batch-size", s.BatchSize, fmt.Sprintf("1 to %d", worker.MaxBatchSize))
	case s.BatchingWindow < 0 || s.BatchingWindow > worker.MaxBatchingWindow:
		return bad("batching-window", s.BatchingWindow, fmt.Sprintf("0s to %gs", worker.MaxBatchingWindow.Seconds()))
	case s.MaxConcurrency < 1 || s.MaxConcurrency > worker.MaxConcurrency:
		return bad("max-concurrency", s.MaxConcurrency, fmt.Sprintf("1 to %d", worker.MaxConcurrency))
	case s.TargetTimeout <= 0 || s.TargetTimeout >= consumer.MaxLease:
		return bad("target-timeout", s.TargetTimeout, fmt.Sprintf("more than 0s and less than %gh", consumer.MaxLease.Hours()))
	case s.StallTimeout < 0:
		return bad("stall-timeout", s.StallTimeout, "0s (no check) or more")
	case s.KillGrace <= 0:
		return bad("kill-grace", s.KillGrace, "more than 0s (the time a command has between SIGTERM and SIGKILL)")
	case visibilityGiven && (s.VisibilityTimeout < time.Second || s.VisibilityTimeout > consumer.MaxLease):
		return bad("visibility-timeout", s.VisibilityTimeout,
			fmt.Sprintf("1s to %gh (leave it out for the queue's VisibilityTimeout)", consumer.MaxLease.Hours()))
	}
	return nil
}

// mappingFlags are the flags of one mapping, refused next to --config.
var mappingFlags = []string{"queue-url", "http", "command", "per-message", "content-type", "header", "batch-size",
	"batching-window", "max-payload", "max-concurrency", "target-timeout", "stall-timeout", "kill-grace",
	"report-batch-item-failures", "visibility-timeout"}

// register adds the mapping flags, with the worker's defaults.
func (s *mappingSpec) register(f *pflag.FlagSet) {
	f.StringVar(&s.QueueURL, "queue-url", "", "the queue to consume: a URL, or a name looked up with GetQueueUrl")
	f.StringVar(&s.HTTP, "http", "", "deliver to this URL: POST a Lambda-shaped SQS event ({\"Records\": […]}); redirects are not followed (a 3xx fails the batch)")
	f.StringVar(&s.Command, "command", "", "deliver to this shell command: the event on standard input, the answer on standard output")
	f.BoolVar(&s.PerMessage, "per-message", false, "with --http: POST each message on its own, its body as is, with sqsd's X-Aws-Sqsd-* headers")
	f.StringVar(&s.ContentType, "content-type", "application/json", "with --per-message: the requests' Content-Type")
	f.StringArrayVar(&s.Headers, "header", nil, "with --http: add 'Name: value' to every request (repeatable); 'Host: name' sets the request's host; Content-Type and User-Agent are the worker's")
	f.IntVar(&s.BatchSize, "batch-size", worker.DefaultBatchSize, "most messages per delivery: 1-10000 (at most 10 on a FIFO queue)")
	f.DurationVar(&s.BatchingWindow, "batching-window", 0, "gather a batch for up to this long (0-300s; at least 1s for batches over 10; none on FIFO queues)")
	s.MaxPayload = worker.DefaultMaxPayload
	f.Var(&s.MaxPayload, "max-payload", "largest event in bytes (suffixes KB, MB, KiB, MiB); a larger message travels alone")
	f.IntVar(&s.MaxConcurrency, "max-concurrency", worker.DefaultMaxConcurrency, "most deliveries at once (1-1000)")
	f.DurationVar(&s.TargetTimeout, "target-timeout", worker.DefaultTargetTimeout, "bound on one delivery: a request with its answer, or a command's run (more than 0s, less than 12h)")
	f.DurationVar(&s.StallTimeout, "stall-timeout", 0, "with --command: stop a command that writes no progress line to file descriptor 3 for this long (0: no check)")
	f.DurationVar(&s.KillGrace, "kill-grace", worker.DefaultKillGrace, "with --command: time between SIGTERM and SIGKILL (more than 0s)")
	f.BoolVar(&s.ReportBatchItemFailures, "report-batch-item-failures", false, "the answer's batchItemFailures lists the failed messages (Lambda's rules)")
	f.DurationVar(&s.VisibilityTimeout, "visibility-timeout", 0, "lease asked for on receive and renewal, 1s-12h (default: the queue's VisibilityTimeout)")
}

// config turns the spec into a worker.Config. what names the mapping in
// errors; stderr (safe for concurrent use) receives commands' standard
// error.
func (s *mappingSpec) config(ctx context.Context, c *sqs.Client, what string, stderr io.Writer) (worker.Config, error) {
	var cfg worker.Config
	fail := func(format string, args ...any) (worker.Config, error) {
		return cfg, fmt.Errorf("%s: %s", what, fmt.Sprintf(format, args...))
	}
	if s.QueueURL == "" {
		return fail("no queue: give --queue-url (queue-url: in a --config file)")
	}
	switch {
	case s.HTTP == "" && s.Command == "":
		return fail("no target: give --http URL or --command 'CMD ARGS'")
	case s.HTTP != "" && s.Command != "":
		return fail("give --http or --command, not both")
	case s.Command != "" && (s.PerMessage || len(s.Headers) > 0):
		return fail("--per-message and --header are for --http")
	case s.HTTP != "" && (s.StallTimeout != 0):
		return fail("--stall-timeout is for --command (an HTTP target is bounded by --target-timeout)")
	}
	if err := s.checkRanges(); err != nil {
		return fail("%v", err)
	}
	if s.HTTP != "" {
		h := http.Header{}
		for _, kv := range s.Headers {
			name, value, ok := strings.Cut(kv, ":")
			if !ok || strings.TrimSpace(name) == "" {
				return fail("--header %q: want 'Name: value'", kv)
			}
			h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
		cfg.Target = &worker.HTTPTarget{URL: s.HTTP, PerMessage: s.PerMessage, ContentType: s.ContentType, Header: h}
	} else {
		cfg.Target = &worker.CommandTarget{Command: s.Command, StallTimeout: s.StallTimeout, KillGrace: s.KillGrace,
			Stderr: stderr}
	}
	cfg.BatchSize = s.BatchSize
	if _, given := s.source["batch-size"]; s.PerMessage && !given {
		cfg.BatchSize = 1 // one message per request; a batch size given is checked as it is
	}
	cfg.BatchingWindow = s.BatchingWindow
	cfg.MaxPayload = int(s.MaxPayload)
	cfg.MaxConcurrency = s.MaxConcurrency
	cfg.TargetTimeout = s.TargetTimeout
	cfg.ReportBatchItemFailures = s.ReportBatchItemFailures
	cfg.VisibilityTimeout = s.VisibilityTimeout
	url, err := queueURL(ctx, c, s.QueueURL)
	if err != nil {
		return fail("%v", err)
	}
	cfg.QueueURL = url
	return cfg, nil
}

// sharedQueueOrigin is the scheme://host the mappings' queue URLs all name,
// for the client's endpoint when nothing else gives it; "" when a mapping
// names its queue by name or the URLs name different hosts.
func sharedQueueOrigin(specs []mappingSpec) string {
	origin := ""
	for i, s := range specs {
		o := queueOrigin(s.QueueURL)
		if o == "" || i > 0 && o != origin {
			return ""
		}
		origin = o
	}
	return origin
}

// workerFile is a `baton worker --config` file.
type workerFile struct {
	Endpoint        string        `yaml:"endpoint"`
	Profile         string        `yaml:"profile"`
	Region          string        `yaml:"region"`
	LogLevel        string        `yaml:"log-level"`
	ShutdownTimeout time.Duration `yaml:"shutdown-timeout"`
	Mappings        []mappingSpec `yaml:"mappings"`

	// given holds the top-level keys the file sets.
	given map[string]bool
}

// workerFieldNotFound matches the decoder's words for an unknown key of a
// --config file, which name a Go type: "field X not found in type T".
var workerFieldNotFound = regexp.MustCompile(`field (\S+) not found in type (` +
	regexp.QuoteMeta(reflect.TypeFor[workerFile]().String()) + `|` + regexp.QuoteMeta(reflect.TypeFor[mappingSpec]().String()) + `)`)

// unknownWorkerKeys puts the decoder's error msg in the words a server's
// config file has for an unknown key: the key, the known one nearest it,
// and the keys of its level (the top or a mapping).
func unknownWorkerKeys(msg string) string {
	return workerFieldNotFound.ReplaceAllStringFunc(msg, func(m string) string {
		sub := workerFieldNotFound.FindStringSubmatch(m)
		keys, whose := yamlKeys(reflect.TypeFor[workerFile]()), "the keys are"
		if sub[2] == reflect.TypeFor[mappingSpec]().String() {
			keys, whose = yamlKeys(reflect.TypeFor[mappingSpec]()), "a mapping's keys are"
		}
		near := ""
		if n := nearestName(sub[1], keys, "-"); n != "" {
			near = " (did you mean " + n + "?)"
		}
		return fmt.Sprintf("unknown key %q%s; %s %s", sub[1], near, whose, strings.Join(keys, ", "))
	})
}

// yamlKeys lists, sorted, the keys the yaml tags of struct type t name.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	return keys
}

// readWorkerFile parses a --config file, refusing unknown keys.
func readWorkerFile(path string) (*workerFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f workerFile
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", path, unknownWorkerKeys(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	if len(f.Mappings) == 0 {
		return nil, fmt.Errorf("%s: no mappings (mappings: - queue-url: … http: … or command: …)", path)
	}
	// Decoded again, leniently now that it is known to be valid, to learn
	// which keys are given: a key left out takes the flag's default, a key
	// given is checked as it is (0 included).
	var raw struct {
		Top      map[string]any `yaml:",inline"`
		Mappings []yaml.Node    `yaml:"mappings"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil || len(raw.Mappings) != len(f.Mappings) {
		return nil, fmt.Errorf("%s: cannot read the mappings again (%v)", path, err)
	}
	f.given = map[string]bool{}
	for k := range raw.Top {
		f.given[k] = true
	}
	var defaults mappingSpec
	defaults.register(pflag.NewFlagSet("defaults", pflag.ContinueOnError))
	for i, n := range raw.Mappings {
		var keys map[string]any
		m := defaults
		if err := n.Decode(&keys); err != nil {
			return nil, fmt.Errorf("%s: mappings[%d]: %v", path, i, err)
		}
		if err := n.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: mappings[%d]: %v", path, i, err)
		}
		m.source = map[string]string{}
		for k := range keys {
			m.source[k] = k + ":"
		}
		f.Mappings[i] = m
	}
	return &f, nil
}

// applyFile sets the general flags the file names, unless the command line
// or an environment variable (fromEnv) set them; it records in source those
// it set.
func applyFile(flags *pflag.FlagSet, f *workerFile, fromEnv, source map[string]string) error {
	set := map[string]string{"endpoint": f.Endpoint, "profile": f.Profile, "region": f.Region, "log-level": f.LogLevel}
	if f.given["shutdown-timeout"] {
		set["shutdown-timeout"] = f.ShutdownTimeout.String()
	}
	for name, v := range set {
		fl := flags.Lookup(name)
		if v == "" || fl == nil || fl.Changed || fromEnv[name] != "" {
			continue
		}
		if err := fl.Value.Set(v); err != nil {
			return fmt.Errorf("--config: %s: %v", name, err)
		}
		source[name] = name + ":"
	}
	return nil
}

func workerCommand() *cobra.Command {
	var (
		o               clientOptions
		spec            mappingSpec
		configPath      string
		logLevel        string
		shutdownTimeout time.Duration
		checkOnly       bool
	)
	cmd := &cobra.Command{
		Use:   "worker --queue-url QUEUE (--http URL | --command 'CMD ARGS')",
		Short: "Feed a queue to an HTTP endpoint or a command, as Lambda's SQS trigger does",
		Long: "worker consumes QUEUE and delivers its messages in batches, as a Lambda event source mapping\n" +
			"does: POSTed as a Lambda-shaped SQS event to --http (or one message per request, sqsd style,\n" +
			"with --per-message), or on the standard input of --command, run with /bin/sh -c.\n\n" +
			"A 2xx answer (an exit status 0) deletes the batch; anything else, or a timeout, brings every\n" +
			"message back after a backoff. With --report-batch-item-failures the answer (the response body,\n" +
			"the command's standard output) lists the failed messages, by Lambda's rules:\n" +
			"{\"batchItemFailures\":[{\"itemIdentifier\":\"<messageId>\"}]}; an empty or null list, null, {} or\n" +
			"nothing is full success; invalid JSON, an empty, null or unknown itemIdentifier, or a wrong key\n" +
			"name fails the whole batch. On a FIFO queue everything after the first failure fails too.\n\n" +
			"Unlike Lambda, the worker keeps every lease alive while a batch waits in its window and while\n" +
			"the target works. An HTTP answer 429 or 503 is waited for as its Retry-After says, the leases\n" +
			"kept and the receives paused, for up to the visibility timeout; then the batch is released\n" +
			"within its lease and the receives stay paused until the target's wait ends. A\n" +
			"command may write a line to file descriptor 3 (BATON_PROGRESS_FD) as progress; one silent for\n" +
			"--stall-timeout, or past --target-timeout, gets SIGTERM on its process group, then SIGKILL\n" +
			"after --kill-grace; when it exits, whatever it left in its process group gets SIGKILL (a\n" +
			"command must not daemonize). SIGTERM or SIGINT to the worker delivers the gathering batches,\n" +
			"lets running ones finish within --shutdown-timeout (less the time to stop commands, twice\n" +
			"--kill-grace plus 1s, and to release leases), then releases what it holds; it exits 1 if a\n" +
			"release or a delete failed then (those messages come back when their leases lapse, or are\n" +
			"delivered again), or if a delivery still ran when it ended (its messages were released\n" +
			"while the target may still work on them). In a container,\n" +
			"run it with an init (docker run --init) so that orphaned processes are reaped.\n\n" +
			"--config FILE runs several mappings: a YAML file with endpoint, profile, region, log-level,\n" +
			"shutdown-timeout and a list of mappings whose keys are the mapping flags' names.\n\n" +
			"Every flag can also be set as a BATON_WORKER_<FLAG> environment variable (for example\n" +
			"BATON_WORKER_QUEUE_URL, BATON_WORKER_CONFIG); a flag on the command line wins over it, and it\n" +
			"wins over the --config file. --endpoint also comes from AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL\n" +
			"or BATON_ENDPOINT, as for the other client commands, then from the queue URL's host. baton\n" +
			"serve's BATON_<FLAG> variables (BATON_CONFIG, BATON_LOG_LEVEL, BATON_REGION…) are not read;\n" +
			"any BATON_* variable baton does not read gets a warning at start.\n" +
			"A setting given with a value outside its range (0 included, where 0 is not documented as\n" +
			"meaning something) is refused, not replaced by its default.",
		Example: "  baton worker --queue-url jobs --http http://127.0.0.1:8080/jobs --report-batch-item-failures\n" +
			"  baton worker --queue-url jobs --http http://127.0.0.1:8080/ --per-message --max-concurrency 20\n" +
			"  baton worker --queue-url events --command './load.sh' --batch-size 1000 --batching-window 10s\n" +
			"  baton worker --config worker.yaml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags := cmd.Flags()
			fromEnv, err := commandEnvDefaults(flags, "worker", nil)
			if err != nil {
				return err
			}
			if fromEnv["endpoint"] != "" {
				// As given: BATON_WORKER_ENDPOINT wins over the variables
				// the client reads for an endpoint not given.
				flags.Lookup("endpoint").Changed = true
			}
			// source: how each setting was given (see mappingSpec.source).
			source := map[string]string{}
			flags.Visit(func(f *pflag.Flag) { source[f.Name] = "--" + f.Name })
			for name, v := range fromEnv {
				source[name] = v
			}
			spec.source = source
			specs := []mappingSpec{spec}
			names := []string{"worker"}
			if configPath != "" {
				for _, name := range mappingFlags {
					if src, given := source[name]; given {
						return fmt.Errorf("%s: the mappings come from --config %s; set %s there", src, configPath, name)
					}
				}
				file, err := readWorkerFile(configPath)
				if err != nil {
					return err
				}
				if err := applyFile(flags, file, fromEnv, source); err != nil {
					return err
				}
				if source["endpoint"] == "endpoint:" {
					// The file's endpoint, which the variables win over.
					o.configured = o.endpoint
				}
				specs, names = file.Mappings, nil
				for i := range specs {
					names = append(names, fmt.Sprintf("%s: mappings[%d]", configPath, i))
				}
			}
			if shutdownTimeout <= 0 {
				what := "--shutdown-timeout " + shutdownTimeout.String()
				switch src := source["shutdown-timeout"]; {
				case strings.HasSuffix(src, ":"):
					what = fmt.Sprintf("%s: %s %v", configPath, src, shutdownTimeout)
				case src != "" && !strings.HasPrefix(src, "--"):
					what = fmt.Sprintf("%s=%v", src, shutdownTimeout)
				}
				return fmt.Errorf("%s: must be more than 0s (how long a SIGTERM's drain and release may take)", what)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)
			}
			stderr := &syncWriter{w: cmd.ErrOrStderr()}
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
			warnStrayVariables(log, os.Environ())
			client, err := o.clientFor(cmd, sharedQueueOrigin(specs))
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var cfgs []worker.Config
			for i := range specs {
				cfg, err := specs[i].config(ctx, client, names[i], stderr)
				if err != nil {
					return err
				}
				cfg.Logger = log
				cfg.ShutdownTimeout = shutdownTimeout
				cfgs = append(cfgs, cfg)
			}
			if checkOnly {
				return checkMappings(cmd, client, cfgs)
			}
			return runWorkers(ctx, client, cfgs)
		},
	}
	f := cmd.Flags()
	o.register(f)
	spec.register(f)
	f.Lookup("endpoint").Usage = endpointUsage("URL of the SQS endpoint", "BATON_WORKER_ENDPOINT")
	f.StringVar(&configPath, "config", "", "YAML file of mappings (several per process; see --help)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&shutdownTimeout, "shutdown-timeout", worker.DefaultShutdownTimeout, "on SIGTERM: how long to drain and release before exiting (more than 0s)")
	f.BoolVar(&checkOnly, "check", false, "check each mapping against its queue (the six-times rule, hours-long leases, whole-batch failures, FIFO limits), print the findings and exit")
	return cmd
}

// checkMappings prints each mapping's findings; any of severity error makes
// it fail.
func checkMappings(cmd *cobra.Command, client *sqs.Client, cfgs []worker.Config) error {
	w := cmd.OutOrStdout()
	bad := 0
	for _, cfg := range cfgs {
		fs, err := worker.Check(cmd.Context(), client, cfg)
		if err != nil {
			return apiError(err)
		}
		fmt.Fprintf(w, "%s -> %s\n", cfg.QueueURL, cfg.Target)
		if len(fs) == 0 {
			fmt.Fprintln(w, "  ok")
		}
		for _, f := range fs {
			fmt.Fprintf(w, "  %s\n", f)
			if f.Severity == consumer.SeverityError {
				bad++
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d finding(s) of severity error: the worker would refuse to start", bad)
	}
	return nil
}

// runWorkers runs one worker per mapping until ctx ends; if one fails to
// start, the others are stopped and its error returned.
func runWorkers(ctx context.Context, client *sqs.Client, cfgs []worker.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var workers []*worker.Worker
	for _, cfg := range cfgs {
		w, err := worker.New(client, cfg)
		if err != nil {
			return err
		}
		workers = append(workers, w)
	}
	if len(cfgs) > 0 {
		done := make(chan struct{})
		defer close(done)
		go sayAlreadyStopping(done, cfgs[0].Logger, cfgs[0].ShutdownTimeout)
	}
	errs := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errs <- w.Run(ctx) }()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = apiError(err)
			cancel()
		}
	}
	return first
}

// sayAlreadyStopping logs each SIGINT or SIGTERM after the first (which
// stops the workers) until done: the shutdown already runs within its
// timeout, and a further signal neither hurries it nor ends the process,
// which would leave the leases it holds unreleased. It listens from the
// start, so that no second signal goes unanswered.
func sayAlreadyStopping(done <-chan struct{}, log *slog.Logger, timeout time.Duration) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var stopAt time.Time
	for {
		select {
		case s := <-sigs:
			if stopAt.IsZero() {
				stopAt = time.Now().Add(timeout)
				continue
			}
			log.Warn("already stopping: a further signal does not hurry the shutdown; it goes on (deliveries, the drain, releases of the leases held, which the stop line counts) for at most --shutdown-timeout",
				"signal", s.String(), "ends_in", max(time.Until(stopAt), 0).Round(100*time.Millisecond))
		case <-done:
			return
		}
	}
}

// syncWriter serialises writes from the deliveries running at once.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// byteSize is a size in bytes, written as a number with an optional unit:
// B, KB (1000), KiB (1024), MB (10^6), MiB (2^20).
type byteSize int

// String renders the size in the largest binary unit that divides it.
func (b *byteSize) String() string {
	n := int(*b)
	switch {
	case n != 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n)
}

// Set parses a size.
func (b *byteSize) Set(s string) error {
	v := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000 * 1000}, {"B", 1}}
	mult := 1
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > (1<<31)/mult {
		return fmt.Errorf("%q is not a size (like 6MiB, 512KB or 1000)", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// Type names the flag's value type in help.
func (b *byteSize) Type() string { return "size" }

// UnmarshalYAML reads a size from a number or a string.
func (b *byteSize) UnmarshalYAML(n *yaml.Node) error {
	if err := b.Set(n.Value); err != nil {
		return fmt.Errorf("line %d: max-payload: %v", n.Line, err)
	}
	return nil
}
