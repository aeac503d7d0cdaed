package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// backupFunc returns what the server runs for POST /admin/api/backup: a
// backup of the embedded store into a new directory under dir (made
// absolute, so that the path answered means the same to any reader), named
// by the time. Nil, no backups, for another store or without dir. It
// removes at once, logging each, the unfinished copies a server stopped
// in the middle of a backup left in dir.
func backupFunc(store baton.Store, dir string) func(context.Context) (string, error) {
	st, ok := store.(*pebblestore.Store)
	if !ok || dir == "" {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	st.RemoveUnfinishedBackups(dir)
	return func(ctx context.Context) (string, error) {
		path := filepath.Join(dir, "baton-backup-"+clock.System{}.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := st.Backup(ctx, path); err != nil {
			return "", err
		}
		return path, nil
	}
}

// backupCommand is `baton backup`: ask a running server for a backup.
func backupCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a point-in-time copy of a running server's embedded store",
		Long: "backup asks the server (its admin API, signed like the SQS requests) to copy its embedded\n" +
			"store while it serves, into a new directory under the --backup-dir it was started with, and\n" +
			"prints that directory once every file of it is on the disk. The copy holds every queue and\n" +
			"message acknowledged before the backup began; `baton serve --data-dir DIR` on it (or on a\n" +
			"copy of it elsewhere) serves exactly that, receipt handles included. Its tables are hard\n" +
			"links to the store's where the file system allows: copy it to another disk to keep it.",
		Example: "  baton serve --backup-dir /var/backups/baton &\n" +
			"  baton backup\n" +
			"  rsync -a /var/backups/baton/ backup-host:baton/",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			var out server.BackupJSON
			if err := adminPost(cmd, c, o.resolvedEndpoint(cmd), "/admin/api/backup", []byte("{}"), "backup", &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out.Path)
			fmt.Fprintf(cmd.ErrOrStderr(), "backup written in %.1f s: start a server on it with --data-dir %s\n", out.Seconds, out.Path)
			return nil
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), bulkAnswerTimeout)
	return cmd
}
