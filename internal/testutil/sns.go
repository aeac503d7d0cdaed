package testutil

import awssns "github.com/aws/aws-sdk-go-v2/service/sns"

// SNSClient returns an aws-sdk-go-v2 SNS client for the server, signing as
// Client does (batontest.Server.SNSClient).
func (s *Server) SNSClient() *awssns.Client { return s.bt.SNSClient() }

// SNSClientFor returns an SNS client that signs with the given key at the
// server clock's time (batontest.Server.SNSClientFor).
func (s *Server) SNSClientFor(accessKeyID, secret string) *awssns.Client {
	return s.bt.SNSClientFor(accessKeyID, secret)
}
