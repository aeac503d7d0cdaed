package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton/clock"
)

// A statement that names a table, function or schema the database does not
// have fails with 42P01, 42883 or 3F000. That is an outage when an operator
// dropped Baton's schema under the running node, and a fault in the
// statement (a name Baton's own SQL got wrong) when the schema is whole:
// the error alone does not tell them apart. So the store asks the database
// whether the tables and functions it found at Open are still there, and
// only when one is not answers 503 naming it (refusalOutage); otherwise the
// call fails as an internal error (500) saying the schema is whole and the
// statement's error. The answer is held for schemaCheckHeld, so that many
// calls failing at once cost one check.

// undefinedObjectCodes are the SQLSTATEs of a statement naming something
// the database does not have (PostgreSQL documentation, Appendix A).
var undefinedObjectCodes = map[string]bool{
	"42P01": true, // undefined_table
	"42883": true, // undefined_function
	"3F000": true, // invalid_schema_name
}

// schemaCheckHeld is how long a check's answer stands for the calls that
// fail after it.
const schemaCheckHeld = time.Second

// errSchemaFault marks a statement's failure naming an object that is not
// there while Baton's schema is whole.
var errSchemaFault = errors.New("a statement named a table, function or schema the database does not have, though Baton's schema is whole: a fault in the statement")

// schemaWatch knows Baton's tables and functions, and checks that they are
// there.
type schemaWatch struct {
	clock clock.Clock // the store's (Options.Clock)
	// tables and functions are those found at Open, as the search path
	// names them: "baton_queues", "baton_lock_queues(bigint[])".
	tables, functions []string

	mu      sync.Mutex // held through a check, so that one runs at a time
	at      time.Time  // when the last check answered
	missing string     // what it found missing, or ""
}

// undefinedObject reports whether err is a statement naming a table,
// function or schema the database does not have.
func undefinedObject(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && undefinedObjectCodes[pgErr.Code]
}

// learnSchema records Baton's tables and functions, as the migrations left
// them, for later checks.
func (s *Store) learnSchema(ctx context.Context) error {
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `
		SELECT array(SELECT c.relname::text FROM pg_class c
				WHERE c.relkind IN ('r', 'p') AND c.relname LIKE 'baton\_%' AND pg_table_is_visible(c.oid) ORDER BY 1),
			array(SELECT p.oid::regprocedure::text FROM pg_proc p
				WHERE p.proname LIKE 'baton\_%' AND pg_function_is_visible(p.oid) ORDER BY 1)`).
			Scan(&s.schema.tables, &s.schema.functions)
	})
	if err != nil {
		return fmt.Errorf("pgstore: read the schema's tables: %w", err)
	}
	return nil
}

// schemaMissing says which of Baton's tables and functions the database no
// longer has ("" if none), checking at most once per schemaCheckHeld.
func (s *Store) schemaMissing(ctx context.Context) (string, error) {
	w := &s.schema
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.at.IsZero() && w.clock.Now().Sub(w.at) < schemaCheckHeld {
		return w.missing, nil
	}
	var tables, functions []string
	err := s.pool.QueryRow(ctx, `
		SELECT array(SELECT t FROM unnest($1::text[]) t WHERE to_regclass(t) IS NULL),
			array(SELECT f FROM unnest($2::text[]) f WHERE to_regprocedure(f) IS NULL)`,
		w.tables, w.functions).Scan(&tables, &functions)
	if err != nil {
		return "", err
	}
	w.missing = strings.Join(append(tables, functions...), ", ")
	w.at = w.clock.Now()
	return w.missing, nil
}

// undefinedObjectOutage answers a statement's failure err that names an
// object the database does not have (undefinedObject): an outage named for
// what of Baton's schema is missing, if the check finds any; else err, an
// internal error marked as a fault in the statement. A check that fails
// leaves the cause unknown, and is an outage saying so.
func (s *Store) undefinedObjectOutage(ctx context.Context, err error) (what string, outage bool, _ error) {
	missing, cerr := s.schemaMissing(ctx)
	switch {
	case cerr != nil:
		return "database schema unknown: a statement named an object the database does not have, and checking Baton's schema failed",
			true, fmt.Errorf("%w (checking the schema: %v)", err, cerr)
	case missing != "":
		return "database schema missing: " + missing + " not there", true, err
	}
	return "", false, fmt.Errorf("pgstore: %w: %w", errSchemaFault, err)
}
