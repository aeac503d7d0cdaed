package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"

	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/sns"
)

// The test-state commands: `baton reset`, `baton export` and `baton import`
// call the admin API's test-state controls (server/admin_state.go), signed
// like the SQS requests. Each acts in the account of the credentials, in
// every region unless --only-region names one.

// stateScope is the admin API path with the --only-region query.
func stateScope(path, region string) string {
	if region == "" {
		return path
	}
	return path + "?" + url.Values{"region": {region}}.Encode()
}

func resetCommand() *cobra.Command {
	var (
		o      clientOptions
		region string
	)
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Delete every queue, with its messages, and every SNS topic of a running server",
		Long: "reset deletes every queue of the account (of the credentials) on the server, in every region\n" +
			"unless --only-region names one, with their messages, cancelling the move tasks running from\n" +
			"them, and every SNS topic with its subscriptions. Unlike DeleteQueue it leaves no name taken\n" +
			"for 60 seconds: a test can create its queues again at once.",
		Example: "  baton reset\n  baton reset --endpoint http://127.0.0.1:9324 --only-region eu-west-1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			var out struct {
				DeletedQueues int `json:"deleted_queues"`
				DeletedTopics int `json:"deleted_topics"`
			}
			if err := adminPost(cmd, c, o.resolvedEndpoint(cmd), stateScope("/admin/api/reset", region), []byte("{}"), "reset", &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %d queues, %d topics\n", out.DeletedQueues, out.DeletedTopics)
			return nil
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), bulkAnswerTimeout)
	cmd.Flags().StringVar(&region, "only-region", "", "reset only this region's queues")
	return cmd
}

func exportCommand() *cobra.Command {
	var (
		o      clientOptions
		region string
	)
	cmd := &cobra.Command{
		Use:   "export [FILE]",
		Short: "Write a running server's queues, messages and topics to a JSON file",
		Long: "export writes the account's queues (attributes, tags) and their messages (body, attributes,\n" +
			"group and deduplication ids, state, sent time, receive count), and its SNS topics (attributes,\n" +
			"tags, subscriptions) to FILE, or to standard output, as JSON (\"format\": 1). It takes no lease\n" +
			"and changes nothing: messages in flight stay in flight, no receive count grows. `baton import`\n" +
			"or `baton serve --import` loads the file.",
		Example: "  baton export state.json\n  baton export | jq '.queues[].name'",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			var st server.StateJSON
			if err := adminGet(cmd, c, o.resolvedEndpoint(cmd), stateScope("/admin/api/export", region), "export", &st); err != nil {
				return err
			}
			b, err := json.MarshalIndent(st, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if len(args) == 0 {
				_, err := cmd.OutOrStdout().Write(b)
				return err
			}
			if err := writeSynced(args[0], b); err != nil {
				return err
			}
			n := 0
			for _, q := range st.Queues {
				n += len(q.Messages)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d queues, %d messages, %d topics to %s\n", len(st.Queues), n, len(st.Topics), args[0])
			return nil
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), bulkAnswerTimeout)
	cmd.Flags().StringVar(&region, "only-region", "", "export only this region's queues")
	return cmd
}

func importCommand() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Load queues, messages and topics from an export into a running server",
		Long: "import creates the queues of FILE (made by `baton export`, or written by hand: a message needs\n" +
			"only a body) in the account of the credentials and stores their messages with their ids and\n" +
			"state, then creates its SNS topics and subscriptions. It refuses, changing nothing, if one of\n" +
			"the queues or topics exists: reset first.",
		Example: "  baton reset && baton import state.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readImport(args[0])
			if err != nil {
				return err
			}
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			var out struct {
				Queues   int `json:"queues"`
				Messages int `json:"messages"`
				Topics   int `json:"topics"`
			}
			if err := adminPost(cmd, c, o.resolvedEndpoint(cmd), "/admin/api/import", b, "import", &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d queues, %d messages, %d topics\n", out.Queues, out.Messages, out.Topics)
			return nil
		},
	}
	o.register(cmd.Flags())
	o.registerTimeout(cmd.Flags(), bulkAnswerTimeout)
	return cmd
}

// readImport reads an export file and checks it before sending it.
func readImport(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	if _, err := server.ReadState(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// importAtStart loads serve's --import file, if any, into the server's
// account before it accepts requests. If a queue of the file exists (a
// durable store started from it before) nothing is loaded and a line says
// so: a restart neither fails nor loads the messages twice.
func importAtStart(ctx context.Context, eng *engine.Engine, svc *sns.Service, path, account string, log *slog.Logger) error {
	if path == "" {
		return nil
	}
	st, err := server.ReadStateFile(path)
	if err != nil {
		return fmt.Errorf("--import: %w", err)
	}
	n, err := server.ImportState(ctx, eng, svc, account, st)
	if errors.Is(err, server.ErrStateQueueExists) || errors.Is(err, sns.ErrStateTopicExists) {
		log.Warn("--import skipped: the store already holds a queue or topic of the file", "file", path, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("--import %s: %w", path, err)
	}
	log.Info("imported", "file", path, "queues", len(st.Queues), "messages", n, "topics", len(st.Topics))
	return nil
}
