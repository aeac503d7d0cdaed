//go:build !unix

package bench

import "time"

// processCPU is not measured on this system: 0 leaves CPU figures out.
func processCPU() time.Duration { return 0 }
