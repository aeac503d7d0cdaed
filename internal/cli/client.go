package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/server"
)

// defaultEndpoint is where the client commands find Baton when nothing
// names an endpoint (see resolveEndpoint): `baton serve`'s default --listen.
const defaultEndpoint = "http://127.0.0.1:9324"

// endpointEnv are the variables that name the endpoint when no flag does,
// the first set winning: the service-specific and the global variable of
// the AWS SDKs and CLI ("Service-specific endpoints" in the AWS SDKs and
// Tools Reference Guide), then Baton's own.
var endpointEnv = []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL", "BATON_ENDPOINT"}

// Dummy credentials sign requests when the AWS configuration has none, so
// that a Baton without authentication works without any AWS setup.
const (
	dummyAccessKeyID     = "baton"
	dummySecretAccessKey = "baton"
)

// answerTimeout is how long a client command waits, by default, for the
// server's answer to a request to begin: the AWS CLI's default read
// timeout (--cli-read-timeout, 60 s), and three times the longest long
// poll. A server that takes the connection and never answers (stuck, or
// something else listening on its port) then ends the command with an
// error instead of leaving it waiting for ever.
const answerTimeout = 60 * time.Second

// bulkAnswerTimeout is answerTimeout for the commands whose answer the
// server builds whole before sending it (backup, export, import, reset),
// which a large store makes take minutes.
const bulkAnswerTimeout = 10 * time.Minute

// clientOptions are the flags every client command (queue, send, receive)
// shares: where the server is and which AWS profile and region to use.
type clientOptions struct {
	endpoint string
	profile  string
	region   string
	// configured is the endpoint a command's --config file gives, which
	// the flag and the environment win over.
	configured string
	// queue is the queue the command acts on, a name or a URL: a full URL
	// names the endpoint when nothing else does (resolveEndpoint). A
	// command sets it before calling client.
	queue string
	// timeout bounds the wait for each answer to begin (--timeout); 0,
	// for a command without the flag, is answerTimeout.
	timeout time.Duration
	// longPoll is how long the server may rightly hold a request before
	// it answers (a receive's wait for messages), which the bound on the
	// answer comes on top of.
	longPoll time.Duration
}

// longestLongPoll is the longest a ReceiveMessage may wait for messages
// (WaitTimeSeconds and ReceiveMessageWaitTimeSeconds are at most 20).
const longestLongPoll = 20 * time.Second

// register adds the client flags to flags (a parent's persistent flags, so
// that its subcommands share them).
func (o *clientOptions) register(flags *pflag.FlagSet) {
	flags.StringVar(&o.endpoint, "endpoint", defaultEndpoint, endpointUsage("URL of the Baton server", ""))
	flags.StringVar(&o.profile, "profile", "", "AWS profile for credentials and region (default: AWS_PROFILE, else \"default\")")
	flags.StringVar(&o.region, "region", "", "region to sign requests for, each a namespace of queues (default: AWS_REGION or the profile's, else the endpoint's if its host is sqs.<region>.…, else us-east-1)")
}

// registerTimeout adds --timeout, the bound on the wait for each answer to
// begin, with def its default.
func (o *clientOptions) registerTimeout(flags *pflag.FlagSet, def time.Duration) {
	flags.DurationVar(&o.timeout, "timeout", def, "how long to wait for each of the server's answers to begin (more than 0s)")
}

// answerBound is the bound on the wait for each answer to begin: --timeout
// for a command that has the flag (more than 0s), else answerTimeout, past
// the longPoll the server may hold the request for.
func (o *clientOptions) answerBound(cmd *cobra.Command) (time.Duration, error) {
	if cmd.Flags().Lookup("timeout") == nil {
		return o.longPoll + answerTimeout, nil
	}
	if o.timeout <= 0 {
		return 0, fmt.Errorf("--timeout %v: want more than 0s", o.timeout)
	}
	return o.longPoll + o.timeout, nil
}

// resolvedEndpoint is where the client sends its requests: see
// resolveEndpoint. given is --endpoint when the command line (or the
// command's own BATON_<COMMAND>_ENDPOINT, which marks the flag given) set it.
func (o *clientOptions) resolvedEndpoint(cmd *cobra.Command) string {
	given := ""
	if f := cmd.Flags().Lookup("endpoint"); f == nil || f.Changed {
		given = o.endpoint
	}
	return resolveEndpoint(given, o.configured, o.queue)
}

// resolveEndpoint is the one rule every client command finds the server by,
// as the AWS tools do: given (--endpoint) if not empty, else the first of
// endpointEnv that is set, else configured (a command's --config file),
// else the scheme and host of queue when it is a full queue URL (so that
// --queue-url http://host:9611/000000000000/jobs alone goes to host:9611),
// else defaultEndpoint. A bare host:port gets an http:// scheme.
func resolveEndpoint(given, configured, queue string) string {
	ep := given
	for _, name := range endpointEnv {
		if ep != "" {
			break
		}
		ep = os.Getenv(name)
	}
	if ep == "" {
		ep = configured
	}
	if ep == "" {
		ep = queueOrigin(queue)
	}
	if ep == "" {
		ep = defaultEndpoint
	}
	if !strings.Contains(ep, "://") {
		ep = "http://" + ep
	}
	return strings.TrimRight(ep, "/")
}

// queueOrigin is scheme://host of a full queue URL, or "" for a queue name
// (or anything else without a scheme and host).
func queueOrigin(queue string) string {
	if !strings.Contains(queue, "://") {
		return ""
	}
	u, err := url.Parse(queue)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// endpointUsage is the help of a client command's --endpoint: what, then
// where else it comes from; own is the command's own variable, if any.
func endpointUsage(what, own string) string {
	env := strings.Join(endpointEnv, ", ")
	if own != "" {
		env = own + ", " + env
	}
	return what + " (when not given: env " + env + ", the first set; else a full queue URL's host; else this default)"
}

// endpointRegion is the region an endpoint's host names
// (http://sqs.eu-central-1.localhost:9324), else us-east-1: a request the
// client signs for the region its host names acts there, as an unsigned one
// would.
func endpointRegion(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		if r := server.HostRegion(u.Host); r != "" {
			return r
		}
	}
	return "us-east-1"
}

// checkRegion refuses v unless it can name a region as Baton keeps them
// (baton.ValidRegion): AWS's SDKs send any name that can be a host name's
// label (their endpoint rules' isValidHostLabel), and AWS's region names
// are lowercase letters, digits and hyphens (us-east-1). Baton serves
// every such name as a region of its own, names AWS has no region of among
// them (a test configured for "local" gets its own namespace), so it
// refuses only what cannot be one (docs/configuration.md, "Queue URLs and
// regions").
func checkRegion(v string) error {
	if !baton.ValidRegion(v) {
		return fmt.Errorf("%q is not a region name: a region is 1 to 64 lowercase letters, digits and hyphens, like us-east-1", v)
	}
	return nil
}

// client returns an SQS client for the server. Credentials and region come
// from aws-sdk-go-v2's default loading, as the AWS CLI finds them
// (AWS_ACCESS_KEY_ID and friends, AWS_PROFILE, ~/.aws/config and
// ~/.aws/credentials, SSO, credential_process), except that the EC2
// instance metadata service is not asked: it is never where a Baton is. When
// no credentials are configured the client signs with dummy ones, which a
// Baton without authentication accepts; a configured source that fails is an
// error.
func (o *clientOptions) client(cmd *cobra.Command) (*sqs.Client, error) {
	cfg, err := o.awsConfig(cmd)
	if err != nil {
		return nil, err
	}
	endpoint := o.resolvedEndpoint(cmd)
	return sqs.NewFromConfig(cfg, func(so *sqs.Options) {
		so.BaseEndpoint = aws.String(endpoint)
	}), nil
}

// awsConfig is the AWS configuration client and snsClient build their
// clients from: credentials and region as client says, requests sent
// through sdkhttp's client (so that a busy machine cannot cut off an
// answer, which the SDK's retries would then send again).
func (o *clientOptions) awsConfig(cmd *cobra.Command) (aws.Config, error) {
	ctx := cmd.Context()
	opts := []func(*config.LoadOptions) error{
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
	}
	if o.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(o.profile))
	}
	if o.region != "" {
		opts = append(opts, config.WithRegion(o.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = endpointRegion(o.resolvedEndpoint(cmd))
	}
	// The server takes a signature's region in any case (it lowercases
	// it), so only what no case makes a region is refused here, before the
	// SDK's "failed to bind endpoint params" or the server's refusal of
	// the signature.
	if err := checkRegion(strings.ToLower(cfg.Region)); err != nil {
		from := "--region"
		if o.region == "" {
			from = "the AWS configuration's region (AWS_REGION, AWS_DEFAULT_REGION or the profile's)"
		}
		return aws.Config{}, fmt.Errorf("%s: %w", from, err)
	}
	bound, err := o.answerBound(cmd)
	if err != nil {
		return aws.Config{}, err
	}
	if cfg.HTTPClient == nil { // the SDK's own default, made here to be bounded
		cfg.HTTPClient = awshttp.NewBuildableClient()
	}
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok { // AWS_CA_BUNDLE's is one too
		cfg.HTTPClient = bc.WithTransportOptions(func(t *http.Transport) { t.ResponseHeaderTimeout = bound })
	}
	cfg.HTTPClient = sdkhttp.Client(cfg.HTTPClient)
	if cfg.Credentials == nil {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(dummyAccessKeyID, dummySecretAccessKey, "")
	} else {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := cfg.Credentials.Retrieve(rctx)
		cancel()
		switch {
		case err == nil:
		case onlyMetadataService(cfg.Credentials):
			cfg.Credentials = credentials.NewStaticCredentialsProvider(dummyAccessKeyID, dummySecretAccessKey, "")
		default:
			// A configured source that fails (credential_process, SSO, a
			// role) is reported, as the AWS CLI reports it: dummy
			// credentials would only turn it into InvalidClientTokenId.
			return aws.Config{}, fmt.Errorf("load AWS credentials: %w", err)
		}
	}
	return cfg, nil
}

// clientFor is client for a command acting on queue, a name or a URL: a
// full queue URL names the endpoint when nothing else does.
func (o *clientOptions) clientFor(cmd *cobra.Command, queue string) (*sqs.Client, error) {
	o.queue = queue
	return o.client(cmd)
}

// onlyMetadataService reports whether p is the SDK's last resort, the EC2
// instance metadata service, which client switches off: no credentials are
// configured anywhere.
func onlyMetadataService(p aws.CredentialsProvider) bool {
	s, ok := p.(aws.CredentialProviderSource)
	if !ok {
		return false
	}
	sources := s.ProviderSources()
	return len(sources) == 1 && sources[0] == aws.CredentialSourceIMDS
}

// queueURL turns a queue argument into a queue URL: an argument with a
// scheme is a URL already; anything else is a name, looked up with
// GetQueueUrl.
func queueURL(ctx context.Context, c *sqs.Client, queue string) (string, error) {
	if strings.Contains(queue, "://") {
		return queue, nil
	}
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	if err != nil {
		return "", namedError("queue", queue, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// queueClient is clientFor a command acting on queue, a name or a URL,
// with the queue's URL (queueURL).
func (o *clientOptions) queueClient(cmd *cobra.Command, queue string) (*sqs.Client, string, error) {
	c, err := o.clientFor(cmd, queue)
	return resolveArg(cmd, c, err, queueURL, queue)
}

// resolveArg returns a client opened for cmd (c, or its error) with what
// resolve makes of the command's argument arg through it, such as a queue's
// URL or a topic's ARN; it fails if either step did.
func resolveArg[C any](cmd *cobra.Command, c C, err error, resolve func(context.Context, C, string) (string, error), arg string) (C, string, error) {
	var none C
	if err != nil {
		return none, "", err
	}
	to, err := resolve(cmd.Context(), c, arg)
	if err != nil {
		return none, "", err
	}
	return c, to, nil
}

// sendZero makes a request carry each of the named integer members, as 0
// when the input leaves it out. aws-sdk-go-v2 does not serialize an int32
// member that is 0, and SQS then applies the queue's attribute instead
// (ReceiveMessageWaitTimeSeconds for WaitTimeSeconds, and so on), so an
// explicit 0 on the command line must be added to the JSON body here.
func sendZero(members ...string) func(*sqs.Options) {
	add := middleware.SerializeMiddlewareFunc("BatonSendZero", func(ctx context.Context, in middleware.SerializeInput, next middleware.SerializeHandler) (middleware.SerializeOutput, middleware.Metadata, error) {
		req, ok := in.Request.(*smithyhttp.Request)
		if !ok || len(members) == 0 {
			return next.HandleSerialize(ctx, in)
		}
		body := map[string]json.RawMessage{}
		if s := req.GetStream(); s != nil {
			if err := json.NewDecoder(s).Decode(&body); err != nil {
				return middleware.SerializeOutput{}, middleware.Metadata{}, fmt.Errorf("send an explicit 0: %w", err)
			}
		}
		for _, m := range members {
			if _, ok := body[m]; !ok {
				body[m] = json.RawMessage("0")
			}
		}
		b, err := json.Marshal(body)
		if err != nil {
			return middleware.SerializeOutput{}, middleware.Metadata{}, err
		}
		if req, err = req.SetStream(bytes.NewReader(b)); err != nil {
			return middleware.SerializeOutput{}, middleware.Metadata{}, err
		}
		in.Request = req
		return next.HandleSerialize(ctx, in)
	})
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Serialize.Insert(add, "OperationSerializer", middleware.After)
		})
	}
}

// apiError reduces an SDK error to what a user needs: the SQS error code
// and message for an error the server answered, or why the server could not
// be reached.
func apiError(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s", ae.ErrorCode(), firstLine(ae.ErrorMessage()))
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return cannotReach(oe, "--endpoint, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL or BATON_ENDPOINT")
	}
	// The transport's bound on the wait for the answer (answerBound): the
	// connection was taken but nothing came back.
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("the server took the request but did not answer within --timeout: is it overloaded or stuck (`baton health` asks its /healthz), or is something else listening on that port?")
	}
	return err
}

// namedError is apiError of err from a call on the queue or topic name (a
// name, URL or ARN as the user gave it), naming it first ("queue jobs:
// InvalidAttributeValue: …"), or nil for a nil err.
func namedError(kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return named(kind, name, apiError(err))
}

// named is namedError of an err already told as a user needs (apiError's,
// with what failed: "delete: …"), or nil for a nil err.
func named(kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", kind, name, err)
}

// cannotReach is what every client command says when the server could not
// be reached (oe: refused, no such host, no route): that, then what to
// check; where names what says where the server is for the command.
func cannotReach(oe *net.OpError, where string) error {
	return fmt.Errorf("cannot reach the server: %w (is `baton serve` running? %s says where)", oe, where)
}

// firstLine is an error message's first line: SignatureDoesNotMatch's, as
// AWS words it, goes on with the canonical request and the string to sign,
// twenty lines that are the server's working, not what to do.
func firstLine(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	return line
}

// completeQueues offers the server's queue names for shell completion.
func (o *clientOptions) completeQueues(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.client(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
	defer cancel()
	out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(toComplete)})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(out.QueueUrls))
	for _, u := range out.QueueUrls {
		names = append(names, u[strings.LastIndex(u, "/")+1:])
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// parsePairs parses repeated NAME=VALUE flags into a map; what names a flag
// in messages ("--attribute").
func parsePairs(what string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s %q: want NAME=VALUE", what, p)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s %s is given twice", what, name)
		}
		m[name] = value
	}
	return m, nil
}
