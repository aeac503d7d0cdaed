// Package cli holds the baton command's verbs, one file each. cmd/baton only
// wires signals and the exit code; tests run Main directly.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Version is set at build time with -ldflags "-X ...cli.Version=…"; a plain
// go build or go install leaves it "dev", and versionString then reports the
// module version and VCS revision the Go toolchain stamped into the binary.
var Version = "dev"

// versionString is what `baton version` and `baton --version` print after
// "baton ": Version, or the module version when Version was not set (as
// `go install …@v1.2.3` stamps it), then the VCS revision, its commit time
// and "+modified" for a build from a work tree with uncommitted changes.
func versionString() string {
	v := Version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "+modified"
	}
	if at != "" {
		rev += " " + at
	}
	return v + " (" + rev + ")"
}

// Main runs the baton command.
type Main struct {
	// Stdin is what `baton send` reads a body from (os.Stdin if nil).
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run executes args and returns the process exit code.
func (m Main) Run(ctx context.Context, args []string) int {
	root := &cobra.Command{
		Use:           "baton",
		Short:         "Baton: a self-hosted queue that speaks the Amazon SQS API",
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("baton {{.Version}}\n")
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	if m.Stdin != nil {
		root.SetIn(m.Stdin)
	}
	root.SetArgs(args)
	root.AddCommand(serveCommand(), queueCommand(), sendCommand(), receiveCommand(), peekCommand(), doctorCommand(), benchCommand(), workerCommand(), versionCommand())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(m.Stderr, "baton:", err)
		return 1
	}
	return 0
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "baton", versionString())
			return nil
		},
	}
}

// envDefaults sets each flag not given on the command line from its
// BATON_<FLAG> environment variable (dashes become underscores), so flags win
// over the environment. These variables are `baton serve`'s: the other
// commands read their own (commandEnvDefaults).
func envDefaults(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		name := envName(f)
		if v, ok := os.LookupEnv(name); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

// envName is the environment variable of a flag: BATON_ and its name in
// upper case with dashes as underscores (--log-level: BATON_LOG_LEVEL).
func envName(f *pflag.Flag) string {
	return "BATON_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}

// commandEnvDefaults is envDefaults for a command other than serve: each
// flag not given on the command line is set from BATON_<COMMAND>_<FLAG>
// (`baton worker --batch-size`: BATON_WORKER_BATCH_SIZE), else from the
// variable shared names for it (--endpoint: BATON_ENDPOINT, which every
// client command reads). serve's BATON_<FLAG> variables (BATON_CONFIG,
// BATON_STORE, BATON_REGION…) are never read: in an environment set up for
// the server they mean something else, or name the server's database. It
// returns, for each flag set from the environment, the variable that set it.
func commandEnvDefaults(flags *pflag.FlagSet, command string, shared map[string]string) (map[string]string, error) {
	from := map[string]string{}
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		for _, name := range []string{commandEnvName(command, f), shared[f.Name]} {
			v, ok := os.LookupEnv(name)
			if name == "" || !ok {
				continue
			}
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
			from[f.Name] = name
			return
		}
	})
	return from, err
}

// commandEnvName is the environment variable of a flag of command (not
// serve): BATON_<COMMAND>_<FLAG> in upper case with dashes as underscores
// (`baton bench --body-size`: BATON_BENCH_BODY_SIZE).
func commandEnvName(command string, f *pflag.Flag) string {
	return "BATON_" + strings.ToUpper(command) + "_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}
