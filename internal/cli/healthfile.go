package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// The health file is how `baton health` finds the server it checks
// whatever the server was told: `baton serve --health-file F` writes its
// /healthz URL (the address it listens on, https with --tls-cert) into F
// once it listens, and `baton health` asks that URL when BATON_HEALTH_FILE
// names F. The container image sets BATON_HEALTH_FILE, which both commands
// read, so that its HEALTHCHECK follows a --listen or a config file's
// listen: as well as BATON_LISTEN. Without the file (a server not started,
// stopped, or unable to write it: a read-only file system) the check asks
// where BATON_LISTEN says, as before the file.

// writeHealthFile writes url into path whole (into a file beside it,
// renamed over it, so that a check never reads half a URL) and returns what
// removes it at a clean stop. A file it cannot write is a warning, not a
// refusal to serve: the check then asks where BATON_LISTEN says, as it
// would without the file. A file another server has written since (two
// servers told one file: the last started wins) is left to it at the stop.
func writeHealthFile(path, url string, log *slog.Logger) (remove func()) {
	if err := replaceFile(path, url+"\n"); err != nil {
		log.Warn("could not write the health file: baton health asks where BATON_LISTEN says instead", "file", path, "err", err)
		return func() {}
	}
	return func() {
		if now, err := readHealthFile(path); err == nil && now != url {
			return
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("could not remove the health file", "file", path, "err", err)
		}
	}
}

// healthURL is the /healthz URL of a server told to listen on listen that
// listens on addr: the URL its start-up line gives (serverURL), the one
// BATON_LISTEN's is asked on (listenHealthURL).
func healthURL(listen string, addr net.Addr, https bool) string {
	return serverURL(listen, addr.String(), https) + "/healthz"
}

// replaceFile writes text into a new file beside path and renames it over
// path.
func replaceFile(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(text)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// readHealthFile is the /healthz URL a server wrote into path, or "" if
// path is empty or there is no such file.
func readHealthFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("health: BATON_HEALTH_FILE: %w", err)
	}
	url := strings.TrimSpace(string(b))
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return "", fmt.Errorf("health: %s holds %q, not a URL baton serve wrote", path, url)
	}
	return url, nil
}
