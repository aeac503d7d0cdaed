package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/spf13/cobra"
)

// ServeConfig is the configuration of `baton serve`.
type ServeConfig struct {
	Listen    string
	DataDir   string
	Store     string
	AccountID string
	Region    string
	LogLevel  string
	// Logs receives the server's log lines (standard error by default).
	Logs io.Writer
}

func serveCommand() *cobra.Command {
	var cfg ServeConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the SQS-compatible server",
		Long: "Run the SQS-compatible server. Every flag can also be set as a BATON_<FLAG> environment\n" +
			"variable (for example BATON_LISTEN); a flag on the command line wins.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := envDefaults(cmd.Flags()); err != nil {
				return err
			}
			cfg.Logs = cmd.ErrOrStderr()
			return Serve(cmd.Context(), cfg, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:9324", "address to serve the SQS API on")
	f.StringVar(&cfg.DataDir, "data-dir", "./baton-data", "directory of the durable store")
	f.StringVar(&cfg.Store, "store", "memory", "store: memory")
	f.StringVar(&cfg.AccountID, "account-id", "000000000000", "account id in queue URLs and ARNs")
	f.StringVar(&cfg.Region, "region", "us-east-1", "region in queue ARNs")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
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
	var store baton.Store
	switch cfg.Store {
	case "memory":
		store = memstore.New()
	default:
		return fmt.Errorf("--store %q: only \"memory\" is available", cfg.Store)
	}
	defer store.Close()
	eng, err := engine.New(engine.Config{Store: store, Region: cfg.Region, Logger: log})
	if err != nil {
		return err
	}
	sweeper := engine.NewRetentionSweeper(eng, time.Minute)
	sweeper.Start(ctx)
	defer sweeper.Stop()
	srv := &http.Server{
		Handler:           server.New(server.Config{Engine: eng, Account: cfg.AccountID, Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	log.Info("baton serving", "addr", ln.Addr().String(), "store", cfg.Store, "account", cfg.AccountID, "region", cfg.Region)
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
	log.Info("shutting down")
	eng.Close() // answer waiting long polls now
	shutCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
