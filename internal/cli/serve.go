package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/gcpace"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/pgstore"
	"github.com/spf13/cobra"
)

// ServeConfig is the configuration of `baton serve`.
type ServeConfig struct {
	Listen  string
	DataDir string
	Store   string
	// Durability is the embedded store's: "full" or "relaxed" (see store.go).
	Durability string
	// BackupDir is where the embedded store's backups go (backup.go); none
	// are taken without it.
	BackupDir string
	AccountID string
	Region    string
	LogLevel  string
	// AccessKeyID and SecretAccessKey are one accepted key, acting for
	// AccountID.
	AccessKeyID     string
	SecretAccessKey string
	// CredentialsFile lists more keys with their accounts (see
	// readCredentialsFile). With any key configured, every SQS request
	// must be signed (SigV4) by one of them.
	CredentialsFile string
	// AllowAnonymous lets the server listen beyond loopback without
	// credentials.
	AllowAnonymous bool
	// TLSCert and TLSKey are PEM files; with both the server speaks HTTPS.
	TLSCert string
	TLSKey  string
	// HealthFile, if set, is the file the server writes its /healthz URL
	// into once it listens, for `baton health` (healthfile.go).
	HealthFile string
	// AdvertiseURL, if set, is the scheme://host[:port] of the queue URLs
	// the server hands out (server.Config.AdvertiseURL).
	AdvertiseURL string
	// AllowHosts are host names (with their subdomains) a loopback server
	// without credentials answers besides IP addresses and localhost
	// (server.Config.AllowHosts).
	AllowHosts []string
	// MaxLongPollsPerClient bounds waiting long polls per client address
	// (0: server.DefaultMaxLongPollsPerClient, negative: no bound).
	MaxLongPollsPerClient int
	// TrustProxy lists the proxies (addresses, CIDR prefixes, comma
	// separated) whose X-Forwarded-For names the client
	// (server.Config.TrustProxies).
	TrustProxy string
	// Queues are created at start-up, before the server accepts requests
	// (from --config; see QueueConfig).
	Queues []QueueConfig
	// Topics are created after them (from --config; see TopicConfig).
	Topics []TopicConfig
	// Import is an export file loaded at start-up (importAtStart).
	Import string
	// SNSQueuePolicies is what SNS does with a queue whose Policy does not
	// let the topic send: off, warn (the default) or enforce
	// (sns.ParseQueuePolicyMode).
	SNSQueuePolicies string
	// Credentials are keys from the --config file, each with its account.
	Credentials []sigv4.Credential
	// Logs receives the server's log lines (standard error by default).
	Logs io.Writer
	// Environ is the environment ("NAME=value" pairs) whose BATON_*
	// variables baton does not read Serve names in a warning each
	// (warnStrayVariables): the serve command's, nil for a server started
	// in process.
	Environ []string
	// BodyReadTimeout bounds the time from a request's first byte to its
	// body's last (0: DefaultBodyReadTimeout). Not a flag: tests shorten it.
	BodyReadTimeout time.Duration
}

// DefaultBodyReadTimeout is how long a client may take to send a whole
// request. The largest request is about 1 MiB; 30 s allows ~35 KB/s.
const DefaultBodyReadTimeout = 30 * time.Second

func serveCommand() *cobra.Command {
	var cfg ServeConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the SQS-compatible server",
		Long: "Run the SQS-compatible server. Every flag can also be set as a BATON_<FLAG> environment\n" +
			"variable (for example BATON_LISTEN); a flag on the command line wins. Any other BATON_*\n" +
			"variable, which baton does not read, gets a warning at start.\n\n" +
			"With --access-key-id/--secret-access-key or --credentials-file, every SQS request must be\n" +
			"signed (AWS Signature Version 4) by one of the keys, and each key sees only its account's\n" +
			"queues. Without credentials the server only listens on a loopback address, unless\n" +
			"--allow-anonymous is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := envDefaults(cmd.Flags()); err != nil {
				return err
			}
			if done, err := loadServeConfig(cmd, &cfg); done || err != nil {
				return err
			}
			cfg.Logs = cmd.ErrOrStderr()
			cfg.Environ = os.Environ()
			return servePaced(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:9324", "address to serve the SQS API on")
	f.StringVar(&cfg.DataDir, "data-dir", "./baton-data", "directory of the durable store")
	f.StringVar(&cfg.Store, "store", storeEmbedded,
		"store: embedded (durable, in --data-dir; converts the SQLite data directory of earlier releases, and \"sqlite\", its former name, still names it), memory (nothing survives a restart) or a postgres:// URL (several servers on one database)")
	f.StringVar(&cfg.Durability, "durability", "full",
		"embedded store's commits: full (fsync each before answering: survives a power cut) or relaxed (survives the process's crash or kill -9; a power cut or a crash of the machine loses the last seconds of acknowledged changes)")
	f.StringVar(&cfg.BackupDir, "backup-dir", "",
		"`directory` baton backup writes the embedded store's point-in-time copies into, each a new data directory (default: no backups)")
	f.StringVar(&cfg.AccountID, "account-id", "000000000000", "account id in queue URLs and ARNs")
	f.StringVar(&cfg.Region, "region", "us-east-1", "default region: of requests that name none (unsigned, to a plain host), of declared queues that name none, and of data written before queues had regions")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&cfg.AccessKeyID, "access-key-id", "", "access key id requests must be signed with (SigV4); its account is --account-id")
	f.StringVar(&cfg.SecretAccessKey, "secret-access-key", "",
		"secret of --access-key-id (prefer BATON_SECRET_ACCESS_KEY: a flag shows in the process list)")
	f.StringVar(&cfg.CredentialsFile, "credentials-file", "",
		"file of access keys, one per line: ACCESS_KEY_ID SECRET_ACCESS_KEY ACCOUNT_ID (# starts a comment line)")
	f.BoolVar(&cfg.AllowAnonymous, "allow-anonymous", false, "serve a non-loopback --listen address without credentials")
	f.StringVar(&cfg.AdvertiseURL, "advertise-url", "",
		"scheme://host[:port] the queue URLs handed out start with (default: the request's, from its Host header), for clients that reach the server by another name")
	f.StringSliceVar(&cfg.AllowHosts, "allow-host", nil,
		"host name a loopback server without credentials also answers, with its subdomains (repeatable; e.g. "+server.LocalStackDomain+" for LocalStack's endpoints and queue URLs; see docs/migrating.md)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (needs --tls-key)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	f.StringVar(&cfg.HealthFile, "health-file", "",
		"`file` to write the server's /healthz URL into once it listens (removed at a clean stop), which baton health asks when BATON_HEALTH_FILE names it: the container image sets both")
	f.IntVar(&cfg.MaxLongPollsPerClient, "max-long-polls-per-client", server.DefaultMaxLongPollsPerClient,
		"long polls one client (access key; unsigned: account and address) may have waiting at once; more get RequestThrottled (negative: no bound)")
	f.StringVar(&cfg.TrustProxy, "trust-proxy", "",
		"proxies (load balancers) whose X-Forwarded-For header names the client: addresses or CIDR prefixes, comma separated")
	f.StringVar(&cfg.SNSQueuePolicies, "sns-queue-policies", "warn",
		"what SNS does with a subscribed queue whose Policy does not let the topic send (AWS delivers nothing to it): warn (deliver, and note and log that AWS would not), enforce (do not deliver, as AWS: to the subscription's dead-letter queue) or off (deliver, say nothing)")
	f.StringVar(&cfg.Import, "import", "", "export file (baton export) whose queues and messages to load at start-up, unless the store holds one of its queues")
	addConfigFlags(f)
	return cmd
}

// credentials gathers the keys of --access-key-id and --credentials-file.
func (cfg ServeConfig) credentials() ([]sigv4.Credential, error) {
	var creds []sigv4.Credential
	switch {
	case cfg.AccessKeyID != "" && cfg.SecretAccessKey != "":
		c := sigv4.Credential{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey, Account: cfg.AccountID}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("--access-key-id: %w", err)
		}
		creds = append(creds, c)
	case cfg.AccessKeyID != "":
		return nil, errors.New("--access-key-id needs --secret-access-key (or BATON_SECRET_ACCESS_KEY)")
	case cfg.SecretAccessKey != "":
		return nil, errors.New("--secret-access-key needs --access-key-id (or BATON_ACCESS_KEY_ID)")
	}
	if cfg.CredentialsFile != "" {
		more, err := readCredentialsFile(cfg.CredentialsFile)
		if err != nil {
			return nil, err
		}
		for _, c := range more {
			if len(creds) > 0 && c.AccessKeyID == creds[0].AccessKeyID {
				return nil, fmt.Errorf("%s: the access key id %s is also given by --access-key-id", cfg.CredentialsFile, c.AccessKeyID)
			}
		}
		creds = append(creds, more...)
	}
	// The --config file's credentials list (duplicates are refused by
	// sigv4.NewVerifier).
	creds = append(creds, cfg.Credentials...)
	return creds, nil
}

// checkExposure refuses to serve a non-loopback address without
// credentials unless allowAnonymous, and logs a warning when it is.
func checkExposure(listen string, authenticated, allowAnonymous bool, log *slog.Logger) error {
	if authenticated || isLoopback(listen) {
		return nil
	}
	if !allowAnonymous {
		return fmt.Errorf("refusing to serve %s without credentials: anyone who can reach it could read and delete every message; "+
			"set --access-key-id and --secret-access-key (or BATON_ACCESS_KEY_ID and BATON_SECRET_ACCESS_KEY) or --credentials-file, "+
			"listen on 127.0.0.1, or pass --allow-anonymous", listen)
	}
	log.Warn("serving without authentication on a non-loopback address (--allow-anonymous): anyone who can reach it can use every queue",
		"listen", listen)
	return nil
}

// isLoopback reports whether a --listen address can only be reached from
// this machine. A host name other than localhost, or no host at all (every
// interface), counts as reachable from the network.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsConfig loads --tls-cert and --tls-key, or returns nil without them.
func (cfg ServeConfig) tlsConfig() (*tls.Config, error) {
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		return nil, nil
	}
	if cfg.TLSCert == "" || cfg.TLSKey == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// servePaced runs Serve with the collector paced (see gcpace): the process
// is the server's alone, unlike the in-process servers of tests and bench
// --self. Pacing starts before the store rebuilds its index: the index
// holds no pointers, so the collections of a low GOGC cost little while it
// grows, and the start's peak stays near the index's size instead of
// twice it.
func servePaced(ctx context.Context, cfg ServeConfig) error {
	pacer := gcpace.New(0)
	pacer.Start(ctx)
	defer pacer.Stop()
	return Serve(ctx, cfg, nil)
}

// Serve runs the server until ctx ends, then stops accepting, answers the
// waiting long polls and returns nil. If ready is not nil it receives the
// listening address once the server accepts requests.
func Serve(ctx context.Context, cfg ServeConfig, ready chan<- string) error {
	if cfg.Logs == nil {
		cfg.Logs = os.Stderr
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(cfg.Logs, &slog.HandlerOptions{Level: level}))
	warnStrayVariables(log, cfg.Environ)
	front, err := cfg.front(log)
	if err != nil {
		return err
	}
	// Every declared queue is checked before any is created, in a scratch
	// engine: a file refused halfway would leave its first queues behind.
	if err := checkQueues(ctx, cfg); err != nil {
		return err
	}
	warnIgnoredStoreFlags(cfg, log)
	store, receiptKey, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	}()
	back, err := startEngine(ctx, store, engine.Config{Store: store, Region: cfg.Region, Logger: log, ReceiptKey: receiptKey})
	if err != nil {
		return err
	}
	eng := back.eng
	if err := createQueues(ctx, eng, cfg.Queues, cfg.AccountID, log); err != nil {
		return err
	}
	snsService := sns.ForStore(eng, store, log)
	defer snsService.Close() // HTTP/S deliveries stop before the store closes
	if err := setQueuePolicies(snsService, cfg.SNSQueuePolicies); err != nil {
		return err
	}
	if err := createTopics(ctx, eng, snsService, cfg.Topics, cfg.AccountID, log); err != nil {
		return err
	}
	if err := importAtStart(ctx, eng, snsService, cfg.Import, cfg.AccountID, log); err != nil {
		return err
	}
	sweeper := engine.NewRetentionSweeper(eng, time.Minute)
	sweeper.Start(ctx)
	defer sweeper.Stop()
	api := server.New(server.Config{
		Engine: eng, Account: cfg.AccountID, Logger: log, Verifier: front.verifier, MaxLongPollsPerClient: cfg.MaxLongPollsPerClient,
		Ready: back.ready, Collectors: storeCollectors(store),
		LocalHostsOnly: front.verifier == nil && isLoopback(cfg.Listen), AdvertiseURL: cfg.AdvertiseURL,
		AllowHosts: cfg.AllowHosts, TrustProxies: front.trustProxies, Refusing: back.refusing, Backup: backupFunc(store, cfg.BackupDir),
		SNS: snsService,
	})
	defer api.Close() // once serveUntil has stopped the requests: the counts of 503s held back
	srv, closeLog := httpServer(api, cmp.Or(cfg.BodyReadTimeout, DefaultBodyReadTimeout), log)
	defer closeLog()
	srv.TLSConfig = front.tls
	ln, err := listen(cfg.Listen)
	if err != nil {
		return err
	}
	cfg.logServing(log, ln.Addr().String(), front)
	if cfg.HealthFile != "" {
		defer writeHealthFile(cfg.HealthFile, healthURL(cfg.Listen, ln.Addr(), front.tls != nil), log)()
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	return serveUntil(ctx, srv, ln, eng, log)
}

// frontDoor is what Serve checks of the configuration before it opens the
// store: how requests are authenticated, encrypted and attributed.
type frontDoor struct {
	creds        []sigv4.Credential
	verifier     *sigv4.Verifier // nil: requests are not signed
	tls          *tls.Config     // nil: plain HTTP
	trustProxies []netip.Prefix
}

// front checks the flags that shape how requests arrive; a bad one is an
// error naming it, before anything is opened.
func (cfg ServeConfig) front(log *slog.Logger) (frontDoor, error) {
	var f frontDoor
	var err error
	if f.creds, err = cfg.credentials(); err != nil {
		return f, err
	}
	if f.tls, err = cfg.tlsConfig(); err != nil {
		return f, err
	}
	if err := checkAdvertiseURL(cfg.AdvertiseURL); err != nil {
		return f, fmt.Errorf("--advertise-url: %w", err)
	}
	if err := server.CheckAllowHosts(cfg.AllowHosts); err != nil {
		return f, fmt.Errorf("--allow-host: %w", err)
	}
	if f.trustProxies, err = server.ParseTrustedProxies(cfg.TrustProxy); err != nil {
		return f, fmt.Errorf("--trust-proxy: %w", err)
	}
	if err := checkExposure(cfg.Listen, len(f.creds) > 0, cfg.AllowAnonymous, log); err != nil {
		return f, err
	}
	if len(f.creds) > 0 {
		if f.verifier, err = sigv4.NewVerifier(clock.System{}, f.creds); err != nil {
			return f, err
		}
	}
	return f, nil
}

// backEnd is the engine over the opened store, with what /healthz asks of
// it.
type backEnd struct {
	eng      *engine.Engine
	ready    func(context.Context) error // nil error: the store takes requests
	refusing func() error                // non-nil: the node refuses requests (nil func: never)
}

// startEngine starts the engine over store with ec. On PostgreSQL the
// engine keeps time by the database's clock (clocksync.go), and the node
// is ready only while that clock is known.
func startEngine(ctx context.Context, store baton.Store, ec engine.Config) (backEnd, error) {
	ec.Clock = clock.System{}
	var syncer *clockSync
	if pg, ok := store.(*pgstore.Store); ok {
		offset := clock.NewOffset(clock.System{})
		syncer = &clockSync{clock: offset, max: maxClockOffset, log: ec.Logger,
			measure: func(ctx context.Context) (time.Duration, error) { return pg.ClockOffset(ctx, time.Now) }}
		if err := syncer.start(ctx, func(ctx context.Context) (time.Duration, error) { return pg.AwaitClockOffset(ctx, time.Now) }); err != nil {
			return backEnd{}, err
		}
		go syncer.run(ctx, clockSyncEvery)
		ec.Clock = offset
	}
	eng, err := engine.New(ec)
	if err != nil {
		return backEnd{}, err
	}
	b := backEnd{eng: eng, ready: eng.StoreReady()}
	if syncer != nil {
		b.ready = syncer.ready(b.ready)
		b.refusing = syncer.refusal
	}
	return b, nil
}

// listen listens on addr (serve's --listen, proxy's), with a hint when the
// port is taken.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%w: another process (another Baton?) listens there: stop it, or choose a free port with --listen 127.0.0.1:PORT (port 0 picks one)", err)
	}
	return ln, err
}

// logServing writes the start-up line: where the server listens, its
// endpoint and dashboard, how it authenticates and what it stores in.
func (cfg ServeConfig) logServing(log *slog.Logger, addr string, f frontDoor) {
	auth := "none"
	if f.verifier != nil {
		auth = fmt.Sprintf("sigv4 (%d keys)", len(f.creds))
	}
	endpoint := serverURL(cfg.Listen, addr, f.tls != nil)
	attrs := []any{"addr", addr, "endpoint", endpoint, "dashboard", endpoint + "/", "tls", f.tls != nil, "auth", auth,
		"store", storeName(cfg.Store)}
	if isEmbedded(cfg.Store) {
		dir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			dir = cfg.DataDir
		}
		attrs = append(attrs, "data_dir", dir)
	}
	if cfg.AdvertiseURL != "" {
		attrs = append(attrs, "advertise_url", cfg.AdvertiseURL)
	}
	log.Info("baton serving", append(attrs, "account", cfg.AccountID, "region", cfg.Region)...)
}

// serveUntil serves on ln until ctx ends, then answers the waiting long
// polls and shuts the server down, giving requests under way 25 s.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, eng *engine.Engine, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	eng.Close() // answer waiting long polls now
	shutCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkAdvertiseURL accepts "" or an http(s) URL of a host alone, with
// no path beyond "/": queue URLs are built by appending /ACCOUNT/NAME.
func checkAdvertiseURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not a URL of a host alone (like http://baton:9324)", v)
	}
	return nil
}

// serverURL is the URL a client on this host (or in this container)
// pastes to reach a server told to listen on listen that listens on addr:
// listen's host (localHost: 127.0.0.1 for every interface), addr's port
// (which port 0 leaves to the system), https with TLS. addr alone will not
// do: Go's listener on 0.0.0.0 reports [::], having taken IPv6 too, and a
// container may have no IPv6 loopback.
func serverURL(listen, addr string, https bool) string {
	scheme := "http"
	if https {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(addr)
	if h, _, err := net.SplitHostPort(listen); err == nil {
		host = h
	}
	return scheme + "://" + net.JoinHostPort(localHost(host), port)
}

// localHost is host, or 127.0.0.1 for an address of every interface
// (0.0.0.0, ::, or none), which no client can dial everywhere and which a
// listener of every interface serves on 127.0.0.1.
func localHost(host string) string {
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return host
}

// httpServer is the HTTP server of `baton serve` and `baton proxy`.
// Headers must arrive within 10 s and the whole request within
// bodyTimeout, so a client trickling its body cannot hold a connection and
// a goroutine for ever. The read deadline ends with the body (net/http
// clears it once the body is read), so a long poll waiting up to 20 s
// afterwards is not cut. There is no WriteTimeout: it would run from the
// request's start, across the long poll's wait and a live stream's life;
// every write of every answer is bounded instead, by the server and the
// proxy (answered.Handler: each 64 KiB, or a flush, within
// answered.Patience, 10 s, the deadline set as the write begins and
// lifted after it), so a peer that stopped reading without closing holds
// a goroutine, and what its handler holds (the answer, one of the 64 live
// streams), seconds, not until TCP gives up. What net/http logs goes to
// log (httpErrorLog); closeLog, called once the server has stopped, says
// the counts of its lines held back.
func httpServer(h http.Handler, bodyTimeout time.Duration, log *slog.Logger) (srv *http.Server, closeLog func()) {
	errorLog, pace := httpErrorLog(log, clock.System{})
	return &http.Server{
		ErrorLog:          errorLog,
		Handler:           h,
		ReadTimeout:       bodyTimeout,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}, pace.Close
}
