package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// healthCommand is `baton health`: GET a server's /healthz and exit 0 only
// on 200. It is the container image's health check, which has no shell,
// curl or wget to make the request with.
func healthCommand() *cobra.Command {
	var (
		url     string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a server's /healthz: exit 0 on 200, 1 otherwise",
		Long: "health asks URL (a server's /healthz, which needs no credentials) and exits 0 when it\n" +
			"answers 200 within --timeout, 1 with the reason on standard error otherwise: the\n" +
			"container image's HEALTHCHECK, which has no shell or HTTP client of its own. Without\n" +
			"--url it asks the URL baton serve wrote into the file BATON_HEALTH_FILE names (its\n" +
			"--health-file; the image sets both), or without that file the server BATON_LISTEN\n" +
			"says baton serve listens on. A URL from the health file is the server's own: https is\n" +
			"asked without checking the certificate, which may name another host.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			own := false
			if !cmd.Flags().Changed("url") {
				u, err := readHealthFile(os.Getenv(healthFileEnv))
				switch {
				case err != nil:
					return err
				case u != "":
					url, own = u, true
				default:
					if u, ok := listenHealthURL(os.Getenv("BATON_LISTEN")); ok {
						url = u
					}
				}
			}
			return checkHealth(cmd.Context(), url, timeout, own)
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:9324/healthz", "the /healthz URL to ask: the one in BATON_HEALTH_FILE's file, else that of BATON_LISTEN's address when it is set, else the default")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}

// listenHealthURL is the /healthz URL of a server started with
// BATON_LISTEN=listen (the container image sets the variable, and whoever
// moves the server to another port sets it again), so that the image's
// health check follows the port: an address of every interface (0.0.0.0,
// [::] or no host) is asked on 127.0.0.1. It reports false for an empty or
// malformed address, which leaves the default.
func listenHealthURL(listen string) (string, bool) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(listen))
	if err != nil || port == "" {
		return "", false
	}
	return "http://" + net.JoinHostPort(localHost(host), port) + "/healthz", true
}

// checkHealth returns nil when url answers 200 within timeout, and an error
// naming url, what failed and what to check otherwise: the server not
// reached (cannotReach, the client commands' words), no answer in time, or
// the status and the first line of what the server said (Baton's 503 says
// why its store is unavailable). own says url is the one the server wrote
// of itself (the health file): its certificate is not checked then, as a
// check of the server's own address needs no proof of its name and sends
// nothing secret.
func checkHealth(ctx context.Context, url string, timeout time.Duration, own bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health: %q is not a URL: %w", url, errors.Unwrap(err))
	}
	client := http.DefaultClient
	if own {
		client = &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health: %s: %w", url, healthError(err, timeout))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		said, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		msg := fmt.Sprintf("health: %s answered %s", url, resp.Status)
		if line := strings.TrimSpace(firstLine(string(said))); line != "" {
			msg += ": " + line
		}
		return errors.New(msg)
	}
	return nil
}

// healthError is why a health check's request got no answer: the server
// not reached, as every client command says it; no answer within the
// timeout; or the transport's own reason, without Go's `Get "URL":`.
func healthError(err error, timeout time.Duration) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return cannotReach(oe, "--url, else the file "+healthFileEnv+" names, else BATON_LISTEN,")
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("no answer within --timeout %v: is the server overloaded or stuck, or is something else listening on that port?", timeout)
	}
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
