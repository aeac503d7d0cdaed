package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// storeCommand is `baton store`: the embedded store's data directory,
// checked and salvaged offline, and the end of a PostgreSQL store's
// rolling upgrade.
func storeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Check or salvage the embedded store's data directory; finish a PostgreSQL store's upgrade",
	}
	cmd.AddCommand(storeCheckCommand(), storeSalvageCommand(), storeFinishUpgradeCommand())
	return cmd
}

func storeCheckCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Read every record and table block of a data directory and report damage",
		Long: "check reads, with the server stopped, every record of the embedded store in --data-dir and\n" +
			"every block of its tables, checking their checksums and that the records agree with each\n" +
			"other (each message with its queue and its body, the log with its mark). It prints what is\n" +
			"intact, each damaged file and what it held, and every message known lost, and exits 1 if\n" +
			"it found damage. It writes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := pebblestore.Check(cmd.Context(), dir)
			if err != nil {
				return err
			}
			printReport(cmd.OutOrStdout(), "intact", r)
			if r.Unopened && r.MissingMarker != "" {
				return fmt.Errorf("%s: %w: its log cannot be opened without the marker of its format; nothing is lost: "+
					"`touch %s`, and the store starts with everything it holds", dir, pebblestore.ErrDamaged, r.MissingMarker)
			}
			if r.Unopened {
				return fmt.Errorf("%s: %w: its log cannot be opened, so nothing of it could be read or salvaged; "+
					"put back the file the damage names, if you have it, or start a server on the latest backup", dir, pebblestore.ErrDamaged)
			}
			if r.Damaged() {
				return fmt.Errorf("%s: %w; `baton store salvage --data-dir %s --to NEWDIR` copies what is intact", dir, pebblestore.ErrDamaged, dir)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "no damage found")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data-dir", "./baton-data", "data directory of the embedded store")
	return cmd
}

func storeSalvageCommand() *cobra.Command {
	var dir, to string
	cmd := &cobra.Command{
		Use:   "salvage",
		Short: "Copy what is intact of a damaged data directory into a new one, listing what was lost",
		Long: "salvage copies, with the server stopped, what reads back intact from the embedded store in\n" +
			"--data-dir into a new data directory --to: queues, the names of deleted queues, move tasks,\n" +
			"SNS topics and subscriptions,\n" +
			"and every message whose record and body both read back, and the receipt key (so receipt\n" +
			"handles stay valid). It prints each message it could not copy (queue, message id) and why.\n" +
			"--data-dir is only read. Start the server on --to once you have read the list.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return errors.New("--to: name the new data directory")
			}
			r, err := pebblestore.Salvage(cmd.Context(), dir, to)
			if err != nil {
				return err
			}
			if err := copyReceiptKey(dir, to); err != nil {
				return err
			}
			printReport(cmd.OutOrStdout(), "copied", r)
			fmt.Fprintf(cmd.OutOrStdout(), "salvaged into %s: %d queues, %d messages; %d messages lost\n", to, r.Queues, r.Messages, len(r.Lost))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data-dir", "./baton-data", "data directory of the embedded store to salvage (only read)")
	cmd.Flags().StringVar(&to, "to", "", "new data directory to copy into (must not exist, or be empty)")
	return cmd
}

func storeFinishUpgradeCommand() *cobra.Command {
	var (
		store  string
		ignore []string
	)
	cmd := &cobra.Command{
		Use:   "finish-upgrade",
		Short: "Drop the indexes a PostgreSQL database keeps for nodes of an earlier release, once none is left",
		Long: "finish-upgrade ends a rolling upgrade of the PostgreSQL store at --store: once every node of\n" +
			"the release before schema 13 is stopped, it drops the indexes of messages the upgrade kept for\n" +
			"them (every send and lease writes to them until then), one DROP INDEX CONCURRENTLY at a time,\n" +
			"which holds off no client; nodes of this release may keep serving. It refuses, dropping\n" +
			"nothing more, while a session of the database that is not of this release (each of its\n" +
			"sessions holds a mark an earlier release's do not) is connected, and lists those sessions: each\n" +
			"may be an old node's. It cannot see a node with no session open. A client you know is no\n" +
			"Baton node (a monitor, psql) is left out by naming its application (application_name) with\n" +
			"--ignore-application. Run again, it does nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !isPostgresURL(store) {
				return errors.New("--store: name the PostgreSQL database, postgres://…")
			}
			// While it waits for the migration lock, the log says so and
			// who holds it.
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			dropped, err := pgstore.FinishUpgrade(cmd.Context(), store, pgstore.FinishOptions{IgnoreApplications: ignore, Logger: log})
			for _, k := range dropped {
				fmt.Fprintf(cmd.OutOrStdout(), "dropped %s (%d bytes)\n", k.Name, k.Bytes)
			}
			if err != nil {
				return err
			}
			if len(dropped) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no index kept for an earlier release: nothing to do")
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), "upgrade finished: no index kept for an earlier release is left")
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "the PostgreSQL store's database, as baton serve --store names it (postgres://…)")
	cmd.Flags().StringArrayVar(&ignore, "ignore-application", nil,
		"application_name of sessions that are no Baton node's, not to be counted (repeatable; \"\" for sessions that name none; not baton)")
	return cmd
}

// printReport writes a Report: the counts, each problem, each lost message.
func printReport(w io.Writer, what string, r *pebblestore.Report) {
	if r.Unopened {
		fmt.Fprintf(w, "%s: not known: the log could not be opened, and none of it was read\n", what)
	} else {
		fmt.Fprintf(w, "%s: %d queues, %d messages\n", what, r.Queues, r.Messages)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "damaged:", p)
	}
	for _, l := range r.Lost {
		fmt.Fprintln(w, "lost:", l)
	}
	for _, t := range r.Unlisted {
		fmt.Fprintln(w, "note: the MANIFEST does not list", t, "(left by a crash mid-compaction, or dropped by a damaged MANIFEST)")
	}
}

// copyReceiptKey copies the receipt key, if any, from one data directory
// to another.
func copyReceiptKey(from, to string) error {
	key, err := os.ReadFile(filepath.Join(from, receiptKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(to, receiptKeyFile), key, 0o600)
}
