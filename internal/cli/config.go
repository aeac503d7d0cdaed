package cli

// The `baton serve --config FILE` file. It is YAML:
//
//	listen: 127.0.0.1:9324
//	log-level: info
//	credentials:
//	  - access-key-id: AKIDORDERS
//	    secret-access-key: s3cret
//	    account-id: "111111111111"   # default: account-id
//	queues:
//	  - name: orders
//	    attributes: {VisibilityTimeout: 60}
//	    tags: {team: billing}
//	    dead-letter: {queue: orders-dlq, max-receive-count: 5}
//	  - name: orders-dlq
//	topics:
//	  - name: order-events
//	    subscriptions:
//	      - {queue: orders, raw: true}
//
// Every other top-level key is one of serve's flags, spelled as the flag
// is, so a setting has one name as a flag, a BATON_* variable and a key.
// A flag on the command line wins over the variable, which wins over the
// file, which wins over the flag's default.

import (
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// secretMask replaces a secret in --print-config's output.
const secretMask = "********"

// notFileKeys are serve's flags that are not settings a file may hold.
var notFileKeys = map[string]bool{"config": true, "print-config": true, "help": true}

// QueueConfig is a queue that `baton serve` creates at start-up, after the
// engine starts and before the server accepts requests. A queue that
// exists already (a durable store's, from an earlier run) gets the
// attributes and tags declared here.
type QueueConfig struct {
	Name string
	// AccountID is the queue's account; empty means ServeConfig.AccountID.
	AccountID string
	// Region is the queue's region; empty means ServeConfig.Region, the
	// default region. Each region is a namespace of queues of its own.
	Region string
	// Attributes are CreateQueue's, values as SQS spells them; a .fifo
	// name implies FifoQueue=true.
	Attributes map[string]string
	Tags       map[string]string
	// DeadLetterQueue, if set, names a queue of the same account, declared
	// in the same file, that receives this queue's messages once they have
	// been received MaxReceiveCount times.
	DeadLetterQueue string
	MaxReceiveCount int

	// where is the declaration's "file:line", for error messages; attrWhere
	// that of each attribute (RedrivePolicy's is dead-letter's).
	where     string
	attrWhere map[string]string
}

// addConfigFlags adds --config and --print-config to serve's flags.
func addConfigFlags(f *pflag.FlagSet) {
	f.String("config", "", "YAML file of settings and of queues and topics to create at start-up (see docs/configuration.md)")
	f.Bool("print-config", false, "print the effective configuration as YAML, secrets masked, and exit")
}

// loadServeConfig reads the --config file, if any, into the flags that
// neither the command line nor a BATON_* variable set (call it after
// envDefaults), and its queues and credentials into cfg. With
// --print-config it also checks the queues against a scratch in-memory
// engine, prints the effective configuration and reports done. Every
// problem with the file is an error naming file:line and the reason.
func loadServeConfig(cmd *cobra.Command, cfg *ServeConfig) (done bool, err error) {
	flags := cmd.Flags()
	path, _ := flags.GetString("config")
	printConfig, _ := flags.GetBool("print-config")
	var file *configFile
	if path != "" {
		if file, err = readConfigFile(path, flags); err != nil {
			return false, err
		}
		if err := file.apply(flags); err != nil {
			return false, err
		}
		cfg.Queues, cfg.Topics = file.queues, file.topics
		if cfg.Credentials, err = file.resolveCredentials(cfg.AccountID); err != nil {
			return false, err
		}
	}
	if err := checkFlagSettings(flags); err != nil {
		return false, err
	}
	if _, err := planQueues(cfg.Queues, cfg.AccountID); err != nil {
		return false, err
	}
	if !printConfig {
		return false, nil
	}
	if _, err := cfg.credentials(); err != nil { // as serve checks them
		return false, err
	}
	if err := checkQueues(cmd.Context(), *cfg); err != nil {
		return false, err
	}
	return true, writeEffectiveConfig(cmd.OutOrStdout(), flags, file, *cfg)
}

// configFile is a parsed --config file.
type configFile struct {
	path     string
	settings []configSetting
	creds    []fileCredential
	queues   []QueueConfig
	topics   []TopicConfig
}

// configSetting is a top-level key that sets the flag of the same name.
type configSetting struct {
	key    string
	values []string
	line   int
}

// fileCredential is an entry of the file's credentials list; an empty
// Account means the server's account-id.
type fileCredential struct {
	sigv4.Credential
	where string
}
