package engine_test

import (
	"os"
	"testing"

	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestMain stops the PostgreSQL cluster that pgtest.MustDatabase shares and
// says in one line which tests were skipped for want of PostgreSQL.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
