package cli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/internal/convert"
)

// convertCommand is `baton convert`: another emulator's queues (and
// goaws's topics) as Baton's config file (package convert), checked as `baton serve
// --config` would check it.
func convertCommand() *cobra.Command {
	var out, env string
	cmd := &cobra.Command{
		Use:   "convert {elasticmq|goaws} FILE",
		Short: "Write Baton's config file from ElasticMQ's elasticmq.conf or goaws's goaws.yaml",
		Long: "Write Baton's config file (baton serve --config) from another emulator's queues, and goaws's\n" +
			"topics with their queue subscriptions: ElasticMQ's elasticmq.conf (HOCON) or goaws's\n" +
			"goaws.yaml. What has no counterpart in Baton is listed in comments at the top of the output,\n" +
			"and on standard error. The output is checked as baton serve checks a config file.\n" +
			"See docs/migrating.md.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			var c *convert.Config
			switch args[0] {
			case "elasticmq":
				c, err = convert.ElasticMQ(string(text), filepath.Base(args[1]))
			case "goaws":
				c, err = convert.Goaws(string(text), filepath.Base(args[1]), env)
			default:
				return fmt.Errorf("convert: unknown format %q; want elasticmq or goaws", args[0])
			}
			if err != nil {
				return err
			}
			yml, err := c.YAML()
			if err != nil {
				return err
			}
			if err := checkConverted(cmd, c, yml); err != nil {
				return err
			}
			for _, n := range c.Notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(yml)
				return err
			}
			return os.WriteFile(out, yml, 0o644)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default: standard output)")
	cmd.Flags().StringVar(&env, "env", "Local", "goaws: the environment of the file to convert")
	return cmd
}

// checkConverted reads yml as `baton serve --config` would, and creates
// its queues and topics in a scratch engine, so that a file Baton would refuse is
// refused here, with the reason.
func checkConverted(cmd *cobra.Command, c *convert.Config, yml []byte) error {
	dir, err := os.MkdirTemp("", "baton-convert-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "baton.yaml")
	if err := os.WriteFile(path, yml, 0o600); err != nil {
		return err
	}
	file, err := readConfigFile(path, serveCommand().Flags())
	if err == nil {
		cfg := ServeConfig{Queues: file.queues, Topics: file.topics, Region: cmp.Or(c.Region, "us-east-1"), AccountID: cmp.Or(c.AccountID, "000000000000")}
		err = checkQueues(cmd.Context(), cfg)
	}
	if err != nil {
		// The scratch file's name and its line numbers mean nothing to
		// the user: the refused output is never written. The reason
		// names the queue or topic.
		scratch := regexp.MustCompile(regexp.QuoteMeta(path) + `(:\d+)?: `)
		return fmt.Errorf("baton serve would refuse what %s converts to: %s", c.Source, scratch.ReplaceAllString(err.Error(), ""))
	}
	return nil
}
