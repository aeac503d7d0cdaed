package pgstore

import (
	"runtime"
	"testing"
	"time"
)

// TestPoolConfig: settings the URL leaves out get Baton's defaults; those
// it sets are kept.
func TestPoolConfig(t *testing.T) {
	t.Parallel()
	cfg, err := poolConfig("postgres://baton@db.example:5433/queues")
	if err != nil {
		t.Fatal(err)
	}
	if want := max(defaultMaxConns, int32(2*runtime.GOMAXPROCS(0))); cfg.MaxConns != want {
		t.Errorf("MaxConns = %d, want %d", cfg.MaxConns, want)
	}
	if cfg.MinConns != defaultMinConns || cfg.MaxConnLifetime != defaultMaxConnLifetime || cfg.MaxConnIdleTime != defaultMaxConnIdleTime {
		t.Errorf("MinConns, MaxConnLifetime, MaxConnIdleTime = %d, %v, %v; want the defaults", cfg.MinConns, cfg.MaxConnLifetime, cfg.MaxConnIdleTime)
	}
	if cfg.ConnConfig.ConnectTimeout != defaultConnectTimeout {
		t.Errorf("ConnectTimeout = %v, want %v", cfg.ConnConfig.ConnectTimeout, defaultConnectTimeout)
	}
	if got := cfg.ConnConfig.RuntimeParams["application_name"]; got != "baton" {
		t.Errorf("application_name = %q, want baton", got)
	}
	if got := describe(cfg.ConnConfig); got != "db.example:5433/queues as baton" {
		t.Errorf("describe = %q", got)
	}

	cfg, err = poolConfig("postgres://baton:pw@db.example/queues?pool_max_conns=3&pool_min_conns=1&pool_max_conn_lifetime=1h&connect_timeout=9&application_name=edge")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConns != 3 || cfg.MinConns != 1 || cfg.MaxConnLifetime != time.Hour || cfg.ConnConfig.ConnectTimeout != 9*time.Second {
		t.Errorf("MaxConns, MinConns, MaxConnLifetime, ConnectTimeout = %d, %d, %v, %v; want the URL's 3, 1, 1h, 9s",
			cfg.MaxConns, cfg.MinConns, cfg.MaxConnLifetime, cfg.ConnConfig.ConnectTimeout)
	}
	if got := cfg.ConnConfig.RuntimeParams["application_name"]; got != "edge" {
		t.Errorf("application_name = %q, want the URL's edge", got)
	}

	// The keyword/value form, with spaces around '=' as libpq allows.
	cfg, err = poolConfig("host=/tmp dbname=queues pool_max_conns = 3 connect_timeout= 9")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConns != 3 || cfg.ConnConfig.ConnectTimeout != 9*time.Second {
		t.Errorf("keyword/value with spaces: MaxConns, ConnectTimeout = %d, %v; want 3, 9s", cfg.MaxConns, cfg.ConnConfig.ConnectTimeout)
	}
}
