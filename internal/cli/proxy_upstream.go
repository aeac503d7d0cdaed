package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/baton-sqs/baton/proxy"
	"github.com/baton-sqs/baton/server"
)

// defaultLocalRegion is the region the proxy signs for in front of an
// upstream on this machine that names none: a Baton's default region.
const defaultLocalRegion = "us-east-1"

// isLocalUpstream reports whether an upstream URL's host is this machine:
// a loopback address or a localhost name.
func isLocalUpstream(u *url.URL) bool {
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// proxyRegion is the region the proxy signs for: --region; else the one
// the upstream's host names (sqs.<region>.amazonaws.com, or a Baton's or
// an emulator's sqs.<region>.… and <region>.queue.…); else, for an
// upstream on this machine, defaultLocalRegion. Any other upstream needs
// --region.
func proxyRegion(flag string, u *url.URL) (region string, inferred bool, err error) {
	if flag != "" {
		if err := checkRegion(flag); err != nil {
			return "", false, fmt.Errorf("--region: %w", err)
		}
		return flag, false, nil
	}
	if r := proxy.RegionOf(u.Hostname()); r != "" {
		return r, true, nil
	}
	if r := server.HostRegion(u.Host); r != "" {
		return r, true, nil
	}
	if isLocalUpstream(u) {
		return defaultLocalRegion, true, nil
	}
	return "", false, fmt.Errorf("--upstream %s names no region (its host is not sqs.<region>.…): give --region", u.Redacted())
}

// proxyCredentials are what the proxy signs the forwarded requests with:
// the standard chain's (environment, profile, role). In front of an
// upstream on this machine the chain never asks EC2's instance metadata
// service, which only answers on EC2 and elsewhere costs seconds of
// timeouts, and without credentials the proxy signs with placeholders,
// which a Baton without credentials accepts.
func proxyCredentials(ctx context.Context, cfg ProxyConfig, region string, local bool, log *slog.Logger) (aws.CredentialsProvider, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if local {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS credentials: %w", err)
	}
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		if !local || cfg.Profile != "" {
			return nil, fmt.Errorf("AWS credentials: %w", err)
		}
		log.Info("no AWS credentials in the environment or profile: signing for the local upstream with placeholder credentials, which a Baton without credentials accepts")
		return credentials.NewStaticCredentialsProvider("baton-proxy", "baton-proxy", ""), nil
	}
	return awsCfg.Credentials, nil
}
