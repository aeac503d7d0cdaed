package cli

import (
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envCommands are the commands other than serve that read their flags from
// BATON_<COMMAND>_<FLAG> (commandEnvDefaults refuses any other).
var envCommands = []string{"worker", "bench", "proxy"}

// healthFileEnv names the file `baton serve --health-file` wrote its
// /healthz URL into, which `baton health` asks.
const healthFileEnv = "BATON_HEALTH_FILE"

// ownVariables are the BATON_* variables of Baton's own that the binary
// does not read, with what reads them: the deploy files', the variable
// `baton worker` sets for its command, and the tests' switches. `baton
// serve`, worker and proxy say nothing of them (a CI environment or a
// developer's shell sets them), nor of a variable starting with one of
// ownPrefixes.
var ownVariables = map[string]string{
	"BATON_PROGRESS_FD":          "set by baton worker for its command",
	"BATON_IMAGE":                "deploy/compose.yaml",
	"BATON_PORT":                 "deploy/compose.yaml",
	"BATON_LB_LISTEN":            "deploy/haproxy.cfg",
	"BATON_LB_STATS_SOCKET":      "deploy/haproxy.cfg",
	"BATON_NODE1":                "deploy/haproxy.cfg",
	"BATON_NODE2":                "deploy/haproxy.cfg",
	"BATON_URL":                  "docs/migrating/localstack/run-init.sh",
	"BATON_LONG_TESTS":           "tests",
	"BATON_IMAGE_TEST":           "tests",
	"BATON_CHROMIUM":             "tests",
	"BATON_SCREENSHOT_DIR":       "tests",
	"BATON_CRASH_ROUNDS":         "tests",
	"BATON_THREE_HOSTS_WAKE":     "tests",
	"BATON_POWERLOSS_CUTS":       "tests",
	"BATON_POWERLOSS_SEED":       "tests",
	"BATON_POWERLOSS_DURABILITY": "tests",
	"BATON_SALVAGE_FATAL":        "tests",
	"BATON_TEST_CONVERT_KILL_AT": "tests",
	"BATON_TEST_CONVERT_DIR":     "tests",
	"BATON_BENCH_MESSAGES":       "benchmarks",
	"BATON_BENCH_RECEIVERS":      "benchmarks",
	"BATON_BENCH_SERVE_ARGS":     "benchmarks",
}

// ownPrefixes start the names of more of Baton's tests' switches
// (BATON_REQUIRE_POSTGRES=1 fails a test, not skips it, without PostgreSQL).
var ownPrefixes = []string{"BATON_REQUIRE_"}

// readVariables is the set of BATON_* variables the baton binary reads:
// serve's BATON_<FLAG>, BATON_<COMMAND>_<FLAG> of each of envCommands,
// BATON_ENDPOINT (every client command's) and BATON_HEALTH_FILE (baton
// health's).
func readVariables(root *cobra.Command) map[string]bool {
	out := map[string]bool{healthFileEnv: true}
	for _, name := range endpointEnv {
		if strings.HasPrefix(name, "BATON_") {
			out[name] = true
		}
	}
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch {
			case c.Name() == "serve":
				out[envName(f)] = true
			case slices.Contains(envCommands, c.Name()):
				out[commandEnvName(c.Name(), f)] = true
			}
		})
	}
	return out
}

// strayVariable is a BATON_* variable of the environment that nothing of
// Baton's reads, with the read one nearest its name ("" if none is near).
type strayVariable struct {
	name, near string
}

// strayVariables lists, in order of name, the BATON_* variables of environ
// ("NAME=value" pairs, as os.Environ) that neither the binary reads (known)
// nor Baton's own files do (ownVariables, ownPrefixes): most likely a
// misspelt one, which would otherwise be ignored without a word.
func strayVariables(known map[string]bool, environ []string) []strayVariable {
	var out []strayVariable
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "BATON_") || known[name] || ownVariables[name] != "" || slices.ContainsFunc(ownPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		out = append(out, strayVariable{name: name, near: nearestName(name, slices.Collect(maps.Keys(known)), "_")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// nearestName is the name of known nearest to name, most likely the one
// meant by a misspelt name: within two edits (a letter left out, doubled or
// changed), else one that is the other's prefix up to sep (BATON_LISTEN, of
// a variable that adds _ADDR to it); "" when none is. Of two as near, the
// first in order of name.
func nearestName(name string, known []string, sep string) string {
	best, bestDist := "", 0
	for _, k := range known {
		d := editDistance(name, k)
		if d > 2 && !strings.HasPrefix(name, k+sep) && !strings.HasPrefix(k, name+sep) {
			continue
		}
		if best == "" || d < bestDist || d == bestDist && k < best {
			best, bestDist = k, d
		}
	}
	return best
}

// warnStrayVariables logs one warning for each of strayVariables, naming
// the variable and the read one nearest it: at the start of each command
// that reads its settings from BATON_* variables and logs (serve, worker,
// proxy; bench prints a report, not a log).
func warnStrayVariables(log *slog.Logger, environ []string) {
	for _, v := range strayVariables(readVariables(Main{}.root()), environ) {
		attrs := []any{"variable", v.name}
		if v.near != "" {
			attrs = append(attrs, "did_you_mean", v.near)
		}
		log.Warn("ignoring an environment variable baton does not read (docs/configuration.md lists those it reads)", attrs...)
	}
}
