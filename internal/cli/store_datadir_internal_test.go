package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A data directory the server may not write, or one on a read-only file
// system, is refused with what to do, not the system's words alone (which
// played through the binary as uid 65534 read "open …/lock: permission
// denied"). Any other error is left as it is.
func TestDataDirErrorSaysWhatToDo(t *testing.T) {
	t.Parallel()
	wrap := func(errno syscall.Errno) error {
		return fmt.Errorf("pebblestore: /data: %w", &fs.PathError{Op: "open", Path: "/data/lock", Err: errno})
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{wrap(syscall.EACCES), fmt.Sprintf("pebblestore: /data: open /data/lock: permission denied: baton serve runs as uid %d, which may not write there: "+
			"make the data directory its own (chown, chmod), or give --data-dir (BATON_DATA_DIR) another", os.Getuid())},
		{wrap(syscall.EROFS), "pebblestore: /data: open /data/lock: read-only file system: give --data-dir (BATON_DATA_DIR) a directory on a writable file system, or --store memory"},
		{wrap(syscall.ENOSPC), "pebblestore: /data: open /data/lock: no space left on device"},
	} {
		got := dataDirError(tt.err)
		if got.Error() != tt.want || !errors.Is(got, tt.err) {
			t.Errorf("dataDirError(%v) = %q, want %q wrapping it", tt.err, got, tt.want)
		}
		if strings.Contains(got.Error(), "\n") {
			t.Errorf("dataDirError(%v) is more than one line", tt.err)
		}
	}
}
