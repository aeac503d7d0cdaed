//go:build !unix

package bench

import "time"

// ProcessCPU is not measured on this system: 0 leaves CPU figures out.
func ProcessCPU() time.Duration { return 0 }
