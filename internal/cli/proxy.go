package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/proxy"
)

// ProxyConfig is `baton proxy`'s configuration.
type ProxyConfig struct {
	Listen          string
	Upstream        string
	Region          string
	Profile         string
	CredentialsFile string
	AdvertiseURL    string
	MaxLeases       int
	LogLevel        string
	Logs            io.Writer
	// Environ is the environment whose BATON_* variables baton does not
	// read RunProxy names in a warning each (warnStrayVariables): the
	// proxy command's, nil for a proxy started in process.
	Environ []string
	// Clock, if set, replaces the system clock (tests).
	Clock clock.Clock
}

func proxyCommand() *cobra.Command {
	var cfg ProxyConfig
	cmd := &cobra.Command{
		Use:   "proxy --upstream URL",
		Short: "Serve the lease doctor for queues on Amazon SQS: forward the SQS API and watch the leases",
		Long: "proxy serves the SQS API on --listen and forwards every request to --upstream (Amazon SQS,\n" +
			"https://sqs.<region>.amazonaws.com, or any SQS endpoint), signed again with the proxy's own AWS\n" +
			"credentials (the standard chain: environment, profile, role), and answers what the upstream\n" +
			"answered, but for the queue URLs it hands out, which name the proxy (or --advertise-url) so that\n" +
			"clients that send a queue's requests to its URL's host stay on it. Point the application at it\n" +
			"with AWS_ENDPOINT_URL_SQS; its code does not change.\n" +
			"As traffic passes, the proxy follows every lease (receives, visibility changes, deletes) and\n" +
			"serves the lease report that `baton doctor --endpoint <proxy>` reads, and /metrics.\n\n" +
			"It sees only the requests that pass through it: consumers that talk to the upstream directly\n" +
			"are invisible to it. Without --credentials-file it accepts any signature, and so only\n" +
			"listens on a loopback address; with it, it checks its clients' signatures as `baton serve` does.\n" +
			"Every flag can also be set as BATON_PROXY_<FLAG>; any BATON_* variable baton does not read\n" +
			"gets a warning at start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv, err := commandEnvDefaults(cmd.Flags(), "proxy", nil)
			if err != nil {
				return err
			}
			if err := checkListen(cfg.Listen); err != nil {
				return fmt.Errorf("%s: %w", cmp.Or(fromEnv["listen"], "--listen"), err)
			}
			cfg.Logs = cmd.ErrOrStderr()
			cfg.Environ = os.Environ()
			return RunProxy(cmd.Context(), cfg, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:9325", "address to serve the SQS API on")
	f.StringVar(&cfg.Upstream, "upstream", "", "SQS endpoint to forward to, as https://sqs.us-east-1.amazonaws.com (required)")
	f.StringVar(&cfg.Region, "region", "", "region to sign the forwarded requests for (default: the upstream's, if its host is sqs.<region>.…; "+defaultLocalRegion+" for an upstream on this machine)")
	f.StringVar(&cfg.Profile, "profile", "", "AWS profile of the proxy's credentials (default: the standard chain's)")
	f.StringVar(&cfg.CredentialsFile, "credentials-file", "",
		"check clients' SigV4 signatures against this file of access keys (baton serve's format: ACCESS_KEY_ID SECRET_ACCESS_KEY ACCOUNT_ID)")
	f.StringVar(&cfg.AdvertiseURL, "advertise-url", "",
		"scheme://host[:port] the queue URLs handed out start with (default: the request's, from its Host header), for clients that reach the proxy by another name")
	f.IntVar(&cfg.MaxLeases, "max-leases", proxy.DefaultMaxLeases,
		"leases (receipt handles) tracked at once; beyond it the oldest is forgotten, and counted in baton_proxy_leases_dropped_total")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}

// RunProxy runs the proxy until ctx is done. If ready is not nil it
// receives the address the proxy listens on.
func RunProxy(ctx context.Context, cfg ProxyConfig, ready chan<- string) error {
	if cfg.Upstream == "" {
		return errors.New("--upstream is required: the SQS endpoint to forward to, as https://sqs.us-east-1.amazonaws.com")
	}
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--upstream %q: want an http:// or https:// URL", cfg.Upstream)
	}
	region, inferred, err := proxyRegion(cfg.Region, u) // proxy_upstream.go
	if err != nil {
		return err
	}
	if err := checkAdvertiseURL(cfg.AdvertiseURL); err != nil {
		return fmt.Errorf("--advertise-url: %w", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(cfg.Logs, &slog.HandlerOptions{Level: level}))
	warnStrayVariables(log, cfg.Environ)
	clk := cfg.Clock
	if clk == nil {
		clk = clock.System{}
	}
	var verifier *sigv4.Verifier
	if cfg.CredentialsFile != "" {
		creds, err := readCredentialsFile(cfg.CredentialsFile)
		if err != nil {
			return err
		}
		if verifier, err = sigv4.NewVerifier(clk, creds); err != nil {
			return fmt.Errorf("--credentials-file: %w", err)
		}
	} else if !isLoopback(cfg.Listen) {
		// An open proxy would sign anyone's requests with the operator's
		// AWS credentials.
		return fmt.Errorf("--listen %s is not a loopback address: without --credentials-file the proxy signs any client's requests with its own AWS credentials", cfg.Listen)
	}
	if inferred {
		log.Info("signing for the region of the upstream, or a local upstream's default; --region to change", "region", region)
	}
	creds, err := proxyCredentials(ctx, cfg, region, isLocalUpstream(u), log)
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Config{
		Upstream: cfg.Upstream, Region: region, Credentials: creds, Verifier: verifier, AdvertiseURL: cfg.AdvertiseURL,
		Clock: clk, MaxLeases: cfg.MaxLeases, Logger: log,
	})
	if err != nil {
		return err
	}
	srv, closeLog := httpServer(p, DefaultBodyReadTimeout, log)
	defer closeLog()
	ln, err := listen(cfg.Listen)
	if err != nil {
		return err
	}
	auth := "any (clients' signatures are not checked)"
	if verifier != nil {
		auth = "sigv4 (" + cfg.CredentialsFile + ")"
	}
	endpoint := serverURL(cfg.Listen, ln.Addr().String(), false)
	log.Info("baton proxy serving", "endpoint", endpoint, "upstream", cfg.Upstream, "region", region, "auth", auth,
		"doctor", "baton doctor --endpoint "+endpoint)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	p.Close() // the dashboard's live streams
	shutCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
