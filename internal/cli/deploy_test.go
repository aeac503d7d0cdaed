package cli_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// deploy/compose.yaml parses, publishes the port the Dockerfile's command
// listens on (on the host's loopback address), leaves the health check to
// the image's (`baton health`, as a compose healthcheck's CMD would be run
// through a shell the image does not have under podman-compose), and baton
// serve accepts its environment as the image's command runs it: listening
// on 0.0.0.0 without credentials, allowed for development. (The image
// itself is built, run and checked in ./e2e, TestContainerImage.)
func TestDeployCompose(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Volumes     []string          `yaml:"volumes"`
			Healthcheck any               `yaml:"healthcheck"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	svc, ok := compose.Services["baton"]
	if !ok {
		t.Fatal("deploy/compose.yaml: no service baton")
	}
	if _, ok := compose.Volumes["baton-data"]; !ok || len(svc.Volumes) != 1 || svc.Volumes[0] != "baton-data:/data" {
		t.Errorf("volumes: %v, %v, want the named volume baton-data on /data", svc.Volumes, compose.Volumes)
	}
	dockerfile, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^CMD \["serve"\]$`).Match(dockerfile) {
		t.Fatal(`deploy/Dockerfile: no CMD ["serve"]`)
	}
	listen := regexp.MustCompile(`(?m)^ENV BATON_LISTEN=0\.0\.0\.0:([0-9]+) BATON_DATA_DIR=/data BATON_HEALTH_FILE=/tmp/\S+$`).FindSubmatch(dockerfile)
	if listen == nil {
		t.Fatal("deploy/Dockerfile: no ENV BATON_LISTEN=0.0.0.0:PORT BATON_DATA_DIR=/data BATON_HEALTH_FILE=/tmp/…")
	}
	port := string(listen[1])
	if svc.Healthcheck != nil {
		t.Errorf("healthcheck %v: want the image's own", svc.Healthcheck)
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*\n?.*CMD \["/usr/local/bin/baton", "health"\]$`).Match(dockerfile) || port != "9324" {
		t.Errorf("deploy/Dockerfile: want a HEALTHCHECK running baton health, which asks where the server listens (%s)", port)
	}
	if len(svc.Ports) != 1 || svc.Ports[0] != "127.0.0.1:${BATON_PORT:-"+port+"}:"+port {
		t.Errorf("ports %v: want %s published on the host's loopback only", svc.Ports, port)
	}
	var env []string
	for k, v := range svc.Environment {
		env = append(env, k+"="+v)
	}
	env = append(env, "BATON_LISTEN=0.0.0.0:"+port, "BATON_DATA_DIR="+t.TempDir())
	r := runCLI(t, cliEnv(t, env...), nil, "serve", "--print-config")
	if r.code != 0 || !strings.Contains(r.stdout, "allow-anonymous: true # from BATON_ALLOW_ANONYMOUS") ||
		!strings.Contains(r.stdout, "listen: 0.0.0.0:"+port+" # from BATON_LISTEN") {
		t.Errorf("serve with compose.yaml's environment: %v", r)
	}
}
