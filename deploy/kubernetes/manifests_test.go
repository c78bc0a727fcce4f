package kubernetes_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// manifests holds every object of every YAML file here, decoded strictly.
type manifests struct {
	deployments    []*appsv1.Deployment
	services       []*corev1.Service
	secrets        []*corev1.Secret
	policies       []*networkingv1.NetworkPolicy
	claims         []*corev1.PersistentVolumeClaim
	files, objects int
}

// decode decodes one YAML document into its Kubernetes type, refusing
// unknown and duplicate fields.
func (m *manifests) decode(name string, doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	strict := func(v any) error { return yaml.UnmarshalStrict(doc, v) }
	var err error
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		d := &appsv1.Deployment{}
		err = strict(d)
		m.deployments = append(m.deployments, d)
	case "v1 Service":
		s := &corev1.Service{}
		err = strict(s)
		m.services = append(m.services, s)
	case "v1 Secret":
		s := &corev1.Secret{}
		err = strict(s)
		m.secrets = append(m.secrets, s)
	case "networking.k8s.io/v1 NetworkPolicy":
		p := &networkingv1.NetworkPolicy{}
		err = strict(p)
		m.policies = append(m.policies, p)
	case "v1 PersistentVolumeClaim":
		c := &corev1.PersistentVolumeClaim{}
		err = strict(c)
		m.claims = append(m.claims, c)
	default:
		return fmt.Errorf("%s: unknown object %q %q: add its type to this test", name, head.APIVersion, head.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", name, head.APIVersion, head.Kind, err)
	}
	m.objects++
	return nil
}

func load(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	m := &manifests{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m.files++
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			if err := m.decode(f, doc); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := load(t)
	if len(m.deployments) != 1 || len(m.services) != 1 || len(m.policies) != 1 || len(m.secrets) < 1 {
		t.Fatalf("want a Deployment, a Service, a NetworkPolicy and the Secrets; got %d, %d, %d, %d", len(m.deployments), len(m.services), len(m.policies), len(m.secrets))
	}
	t.Logf("%d objects in %d files", m.objects, m.files)

	// The decoder is strict: a misspelt field fails.
	data, _ := os.ReadFile("deployment.yaml")
	typo := bytes.Replace(data, []byte("readinessProbe:"), []byte("readinesProbe:"), 1)
	if err := (&manifests{}).decode("typo", typo); err == nil || !strings.Contains(err.Error(), "readinesProbe") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func port(t *testing.T, hostport string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%q: %v", hostport, err)
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func TestManifestsFitThePluginService(t *testing.T) {
	m := load(t)
	d := m.deployments[0]
	pod := d.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]

	grpcPort := checkProbesAndPorts(t, c)
	checkTLSFromSecret(t, m, pod, c)
	checkServiceAndPolicySelect(t, m, pod, grpcPort)
	checkDrainBelowGracePeriod(t, d, c)
	checkRunningServiceAnswersProbe(t, c)
}

// checkProbesAndPorts checks that the probes ask, in plain text, the
// health-only port about the service the plugin serves, and that the
// container names both ports. It returns the gRPC port.
func checkProbesAndPorts(t *testing.T, c corev1.Container) (grpcPort int32) {
	t.Helper()
	grpcPort, healthPort := port(t, env(c, plugin.EnvListen)), port(t, env(c, plugin.EnvHealthListen))
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.GRPC == nil {
			t.Fatalf("%s probe: want Kubernetes' native gRPC probe", name)
		}
		if p.GRPC.Service == nil || *p.GRPC.Service != wire.HealthService {
			t.Fatalf("%s probe names service %v; the plugin serves health for %q", name, p.GRPC.Service, wire.HealthService)
		}
		if p.GRPC.Port != healthPort {
			t.Fatalf("%s probe on port %d; the plain-text health port (%s) is %d", name, p.GRPC.Port, plugin.EnvHealthListen, healthPort)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["grpc"] != grpcPort || ports["health"] != healthPort {
		t.Fatalf("container ports %v; want grpc %d and health %d", ports, grpcPort, healthPort)
	}
	return grpcPort
}

// checkTLSFromSecret checks that the three TLS files come from the
// Secret's keys, mounted, and that the Secret is of cert-manager's type.
func checkTLSFromSecret(t *testing.T, m *manifests, pod corev1.PodTemplateSpec, c corev1.Container) {
	t.Helper()
	var mount corev1.VolumeMount
	for _, vm := range c.VolumeMounts {
		if vm.Name == "tls" {
			mount = vm
		}
	}
	var secretName string
	for _, v := range pod.Spec.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	var secret *corev1.Secret
	for _, s := range m.secrets {
		if s.Name == secretName {
			secret = s
		}
	}
	if secret == nil || mount.MountPath == "" {
		t.Fatalf("the tls volume names Secret %q, which the manifests do not hold (or is not mounted)", secretName)
	}
	for _, name := range []string{plugin.EnvTLSCert, plugin.EnvTLSKey, plugin.EnvTLSClientCA} {
		file := env(c, name)
		key, ok := strings.CutPrefix(file, mount.MountPath+"/")
		if !ok {
			t.Fatalf("%s=%s is not in the mounted Secret (%s)", name, file, mount.MountPath)
		}
		if _, ok := secret.Data[key]; !ok {
			t.Fatalf("%s=%s: Secret %s has no key %q", name, file, secret.Name, key)
		}
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Fatalf("Secret %s is of type %q; cert-manager writes %q", secret.Name, secret.Type, corev1.SecretTypeTLS)
	}
}

// checkServiceAndPolicySelect checks that the Service and the
// NetworkPolicy select these pods and the gRPC port, and that the policy
// admits only the host's pods.
func checkServiceAndPolicySelect(t *testing.T, m *manifests, pod corev1.PodTemplateSpec, grpcPort int32) {
	t.Helper()
	svc := m.services[0]
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Fatalf("the Service selects %s=%s, which the pods do not have", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != grpcPort || svc.Spec.Ports[0].TargetPort.String() != "grpc" {
		t.Fatalf("Service ports %+v; want %d to the grpc port", svc.Spec.Ports, grpcPort)
	}
	np := m.policies[0]
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod.Labels[k] != v {
			t.Fatalf("the NetworkPolicy selects %s=%s, which the pods do not have", k, v)
		}
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("NetworkPolicy: want one ingress rule; got %+v", np.Spec)
	}
	rule := np.Spec.Ingress[0]
	if len(rule.From) == 0 || rule.From[0].PodSelector == nil || len(rule.From[0].PodSelector.MatchLabels) == 0 {
		t.Fatalf("NetworkPolicy admits %+v; want only the host's pods, by label", rule.From)
	}
	if len(rule.Ports) != 1 || rule.Ports[0].Port.IntValue() != int(grpcPort) {
		t.Fatalf("NetworkPolicy ports %+v; want the gRPC port %d only", rule.Ports, grpcPort)
	}
}

// checkDrainBelowGracePeriod checks that the plugin's drain timeout ends
// before Kubernetes' termination grace period does.
func checkDrainBelowGracePeriod(t *testing.T, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	if d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	if drain, err := time.ParseDuration(env(c, plugin.EnvDrainTimeout)); err != nil || drain >= time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds)*time.Second {
		t.Fatalf("%s=%s must be below terminationGracePeriodSeconds=%d", plugin.EnvDrainTimeout, env(c, plugin.EnvDrainTimeout), *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}
}

// checkRunningServiceAnswersProbe runs a real plugin service with the
// Deployment's environment (files and addresses made local) and checks
// that it answers the readiness probe's question.
func checkRunningServiceAnswersProbe(t *testing.T, c corev1.Container) {
	t.Helper()
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	runEnv := map[string]string{}
	for _, e := range c.Env {
		runEnv[e.Name] = e.Value
	}
	runEnv[plugin.EnvListen] = "127.0.0.1:0"
	runEnv[plugin.EnvTLSCert], runEnv[plugin.EnvTLSKey], runEnv[plugin.EnvTLSClientCA] = pki.ServerCert, pki.ServerKey, pki.CAFile
	_, healthAddr, _ := remotetest.StartProbed(t, runEnv, "fs", plugin.Config{})
	cc, err := grpc.NewClient("passthrough:///"+healthAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: *c.ReadinessProbe.GRPC.Service})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("the readiness probe's question to a running service: %v, %v", resp, err)
	}
}
