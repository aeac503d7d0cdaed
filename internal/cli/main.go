// Package cli holds the baton command's verbs, one file each. cmd/baton only
// wires signals and the exit code; tests run Main directly.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
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
	root := m.root()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		// cobra's unknown command error ends in a blank line.
		fmt.Fprintln(m.Stderr, "baton:", strings.TrimRight(err.Error(), "\n"))
		return 1
	}
	return 0
}

// root is the baton command with every subcommand and flag, writing to m's
// streams: the one table of commands, which the docs check reads too.
func (m Main) root() *cobra.Command {
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
	root.AddCommand(serveCommand(), queueCommand(), sendCommand(), topicCommand(), publishCommand(), receiveCommand(), peekCommand(), resetCommand(), exportCommand(), importCommand(), convertCommand(), doctorCommand(), backupCommand(), proxyCommand(), benchCommand(), workerCommand(), storeCommand(), versionCommand(), healthCommand())
	usage := root.UsageFunc()
	root.SetUsageFunc(func(c *cobra.Command) error {
		quietBools(c.LocalFlags())
		quietBools(c.InheritedFlags())
		return usage(c)
	})
	root.SetFlagErrorFunc(suggestFlag)
	return root
}

// quietBool is a bool flag's value as help shows it. pflag writes
// "--flag[=true|false]" for a value that says IsBoolFlag, which quietBool
// does not; the flag's NoOptDefVal ("true", set when it was added) still
// lets --flag stand alone, and --flag=false still parses.
type quietBool struct{ pflag.Value }

// quietBools makes the bool flags of flags show as plain --flag in help.
func quietBools(flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		if _, done := f.Value.(quietBool); !done && f.Value.Type() == "bool" {
			f.Value = quietBool{f.Value}
		}
	})
}

// suggestFlag is the root's flag error function: an unknown --flag gets
// the command's flags nearest to it, as cobra suggests commands.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (editDistance(name, f.Name) <= 2 || len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return err
	}
	return fmt.Errorf("%w\n\nDid you mean this?\n\t%s", err, strings.Join(near, "\n\t"))
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// groupOnly makes cmd a command that only groups subcommands: alone it
// prints its help; with an argument that names no subcommand it fails,
// suggesting the nearest (cobra does this for the root only; other
// commands without a Run print their help and exit 0).
func groupOnly(cmd *cobra.Command) {
	cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets on the root only
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if near := c.SuggestionsFor(args[0]); len(near) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(near, "\n\t")
		}
		return errors.New(msg)
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
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
// variable shared names for it. (--endpoint's other variables, which every
// client command reads, are resolveEndpoint's.) serve's BATON_<FLAG>
// variables (BATON_CONFIG, BATON_STORE, BATON_REGION…) are never read: in
// an environment set up for the server they mean something else, or name
// the server's database. It returns, for each flag set from the
// environment, the variable that set it.
func commandEnvDefaults(flags *pflag.FlagSet, command string, shared map[string]string) (map[string]string, error) {
	if !slices.Contains(envCommands, command) {
		panic("commandEnvDefaults: " + command + " is not in envCommands, so baton serve would call its variables unknown")
	}
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
