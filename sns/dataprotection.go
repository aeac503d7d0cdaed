package sns

import "context"

// Data protection policies: Baton keeps none and enforces none. A topic's
// policy reads as none, as AWS answers a topic without one; setting one is
// refused, saying so, as CreateTopic refuses the attribute.

// GetDataProtectionPolicy returns the topic's data protection policy:
// always "" (none), or NotFound if the topic does not exist.
func (s *Service) GetDataProtectionPolicy(ctx context.Context, c Caller, resourceARN string) (string, error) {
	if resourceARN == "" {
		return "", missing("ResourceArn")
	}
	_, err := s.topic(ctx, c, "ResourceArn", resourceARN)
	return "", err
}

// PutDataProtectionPolicy refuses to set a topic's data protection
// policy: InvalidParameter saying Baton does not serve it, after the
// checks AWS makes of the topic and the parameters.
func (s *Service) PutDataProtectionPolicy(ctx context.Context, c Caller, resourceARN, policy string) error {
	switch {
	case resourceARN == "":
		return missing("ResourceArn")
	case policy == "":
		return missing("DataProtectionPolicy")
	}
	if _, err := s.topic(ctx, c, "ResourceArn", resourceARN); err != nil {
		return err
	}
	return notBuilt("DataProtectionPolicy")
}
