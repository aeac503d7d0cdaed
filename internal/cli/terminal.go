package cli

import (
	"io"
	"os"
)

// isTerminal reports whether w is a terminal: where a person may be
// watching (a progress line that rewrites itself, a hint that the command
// waits) or typing. The null device is a character device too, as a
// terminal is, but nobody is there: standard input from /dev/null (a
// script, a CI job, `< /dev/null`) is not a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
