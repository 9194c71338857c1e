package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The Kubernetes objects of the example, as far as it uses them, with
// the API's field names: decoding them with unknown fields refused
// catches a misspelt or misplaced field, which Kubernetes would drop.

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type kind struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
}

type service struct {
	kind `yaml:",inline"`
	Spec struct {
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podDisruptionBudget struct {
	kind `yaml:",inline"`
	Spec struct {
		MaxUnavailable int           `yaml:"maxUnavailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		FieldRef struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []envVar `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type statefulSet struct {
	kind `yaml:",inline"`
	Spec struct {
		ServiceName         string        `yaml:"serviceName"`
		Replicas            int           `yaml:"replicas"`
		PodManagementPolicy string        `yaml:"podManagementPolicy"`
		Selector            labelSelector `yaml:"selector"`
		UpdateStrategy      struct {
			Type string `yaml:"type"`
		} `yaml:"updateStrategy"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				Affinity struct {
					PodAntiAffinity struct {
						Required []struct {
							LabelSelector labelSelector `yaml:"labelSelector"`
							TopologyKey   string        `yaml:"topologyKey"`
						} `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
					} `yaml:"podAntiAffinity"`
				} `yaml:"affinity"`
				SecurityContext struct {
					RunAsNonRoot   bool `yaml:"runAsNonRoot"`
					RunAsUser      int  `yaml:"runAsUser"`
					RunAsGroup     int  `yaml:"runAsGroup"`
					FSGroup        int  `yaml:"fsGroup"`
					SeccompProfile struct {
						Type string `yaml:"type"`
					} `yaml:"seccompProfile"`
				} `yaml:"securityContext"`
				TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				AccessModes []string `yaml:"accessModes"`
				Resources   struct {
					Requests map[string]string `yaml:"requests"`
				} `yaml:"resources"`
			} `yaml:"spec"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

// manifest is the example's objects.
type manifest struct {
	services map[string]service
	pdbs     []podDisruptionBudget
	sets     []statefulSet
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	path := filepath.Join("kubernetes", "collie.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := manifest{services: map[string]service{}}
	// Two decoders in step: one finds each document's kind, the other
	// decodes it into its type with unknown fields refused, reporting
	// the file's line numbers.
	kinds := yaml.NewDecoder(bytes.NewReader(data))
	docs := yaml.NewDecoder(bytes.NewReader(data))
	docs.KnownFields(true)
	for i := 1; ; i++ {
		var k kind
		err := kinds.Decode(&k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
		var v any
		switch fmt.Sprintf("%s %s", k.APIVersion, k.Kind) {
		case "v1 Service":
			v = &service{}
		case "policy/v1 PodDisruptionBudget":
			v = &podDisruptionBudget{}
		case "apps/v1 StatefulSet":
			v = &statefulSet{}
		default:
			t.Fatalf("%s: document %d is a %s %s, which this test does not know", path, i, k.APIVersion, k.Kind)
		}
		if err := docs.Decode(v); err != nil {
			t.Errorf("%s: %s %s: %v", path, k.Kind, k.Metadata.Name, err)
		}
		switch v := v.(type) {
		case *service:
			m.services[v.Metadata.Name] = *v
		case *podDisruptionBudget:
			m.pdbs = append(m.pdbs, *v)
		case *statefulSet:
			m.sets = append(m.sets, *v)
		}
	}
	return m
}

// podEnv is the environment of a container of pod name in namespace, as
// the kubelet makes it: the image's variables, then the container's,
// fieldRefs resolved and $(VAR) replaced by variables defined before.
func podEnv(t *testing.T, image map[string]string, c container, name, namespace string) map[string]string {
	t.Helper()
	env := maps.Clone(image)
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	defined := map[string]bool{}
	for _, v := range c.Env {
		value := ref.ReplaceAllStringFunc(v.Value, func(s string) string {
			if k := s[2 : len(s)-1]; defined[k] {
				return env[k]
			}
			return s
		})
		if v.ValueFrom != nil {
			switch v.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				value = name
			case "metadata.namespace":
				value = namespace
			default:
				t.Fatalf("env %s: fieldRef %q is not one this test resolves", v.Name, v.ValueFrom.FieldRef.FieldPath)
			}
		}
		env[v.Name] = value
		defined[v.Name] = true
	}
	return env
}

func TestKubernetesExample(t *testing.T) {
	m := readManifest(t)
	if len(m.sets) != 1 || len(m.pdbs) != 1 {
		t.Fatalf("%d StatefulSets and %d PodDisruptionBudgets, want one of each", len(m.sets), len(m.pdbs))
	}
	set := m.sets[0]
	spec := set.Spec
	labels := spec.Template.Metadata.Labels
	selects := func(selector map[string]string) bool {
		for k, v := range selector {
			if labels[k] != v {
				return false
			}
		}
		return len(selector) > 0
	}
	if !selects(spec.Selector.MatchLabels) {
		t.Errorf("the StatefulSet's selector %v does not select its pods %v", spec.Selector.MatchLabels, labels)
	}
	if spec.Replicas != 3 {
		t.Errorf("replicas %d, want an ensemble of 3", spec.Replicas)
	}
	// OrderedReady would wait for collie-0 to be ready, which needs a quorum.
	if spec.PodManagementPolicy != "Parallel" {
		t.Errorf("podManagementPolicy %q, want Parallel", spec.PodManagementPolicy)
	}
	if pdb := m.pdbs[0]; pdb.Spec.MaxUnavailable != 1 || !selects(pdb.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget: maxUnavailable %d over %v, want 1 over the pods", pdb.Spec.MaxUnavailable, pdb.Spec.Selector.MatchLabels)
	}
	anti := spec.Template.Spec.Affinity.PodAntiAffinity.Required
	if len(anti) != 1 || anti[0].TopologyKey != "kubernetes.io/hostname" || !selects(anti[0].LabelSelector.MatchLabels) {
		t.Errorf("pod anti-affinity %+v, want the pods kept on different nodes", anti)
	}
	if sc := spec.Template.Spec.SecurityContext; !sc.RunAsNonRoot || sc.RunAsUser == 0 || sc.FSGroup == 0 {
		t.Errorf("pod security context %+v, want a non-root user and an fsGroup that owns the volume", sc)
	}

	headless, ok := m.services[spec.ServiceName]
	if !ok || headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReadyAddresses || !selects(headless.Spec.Selector) {
		t.Fatalf("serviceName %q: want a headless Service of the pods that publishes them before they are ready, got %+v", spec.ServiceName, headless)
	}

	if len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want one", len(spec.Template.Spec.Containers))
	}
	c := spec.Template.Spec.Containers[0]
	if sc := c.SecurityContext; sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !sc.ReadOnlyRootFilesystem {
		t.Errorf("container security context %+v, want no privilege escalation and a read-only root", sc)
	}
	d := readDockerfile(t)
	if got, want := c.Args, execForm(t, one(t, d.final, "CMD")); !slices.Equal(got, want) {
		t.Errorf("args %v, want the image's CMD %v", got, want)
	}
	containerPorts := map[string]int{}
	for _, p := range c.Ports {
		containerPorts[p.Name] = p.ContainerPort
	}
	for name, path := range map[string]string{"readiness": "/ready", "liveness": "/live"} {
		p := c.ReadinessProbe
		if name == "liveness" {
			p = c.LivenessProbe
		}
		if p == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != "admin" {
			t.Errorf("%s probe %+v, want GET %s on the admin port", name, p, path)
		}
	}
	for _, s := range []service{headless, m.services["collie"]} {
		for _, p := range s.Spec.Ports {
			if containerPorts[p.TargetPort] != p.Port {
				t.Errorf("Service %s: port %s %d goes to the container's %q, port %d", s.Metadata.Name, p.Name, p.Port, p.TargetPort, containerPorts[p.TargetPort])
			}
		}
	}
	if client := m.services["collie"]; len(client.Spec.Ports) != 1 || client.Spec.Ports[0].TargetPort != "client" || client.Spec.ClusterIP == "None" || client.Spec.PublishNotReadyAddresses {
		t.Errorf("Service collie %+v, want the client port of ready servers", client.Spec)
	}
	mounts := map[string]string{}
	for _, v := range c.VolumeMounts {
		mounts[v.Name] = v.MountPath
	}
	claimed := map[string]bool{}
	for _, v := range spec.VolumeClaimTemplates {
		claimed[v.Metadata.Name] = true
	}

	// Each pod's server: the id from its ordinal, the others by their
	// stable names under the headless Service, on the ports the pod and
	// the Services name.
	image := d.env(t)
	const namespace = "prod"
	for ordinal := range spec.Replicas {
		pod := set.Metadata.Name + "-" + strconv.Itoa(ordinal)
		env := podEnv(t, image, c, pod, namespace)
		e, cfg := serverConfig(t, env)
		if e.ID != uint64(ordinal+1) || cfg.ServerID != e.ID || cfg.Standalone {
			t.Errorf("%s: server id %d, standalone %v; want member %d", pod, cfg.ServerID, cfg.Standalone, ordinal+1)
		}
		if len(cfg.Servers) != spec.Replicas {
			t.Fatalf("%s: %d servers, want the %d replicas:\n%s", pod, len(cfg.Servers), spec.Replicas, e.ZooCfg)
		}
		for i, s := range cfg.Servers {
			host := fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", set.Metadata.Name, i, spec.ServiceName, namespace)
			if i == ordinal {
				host = "0.0.0.0"
			}
			if s.ID != uint64(i+1) || s.Host != host || s.Observer ||
				s.PeerPort != containerPorts["peer"] || s.ElectionPort != containerPorts["election"] || s.ClientPort != containerPorts["client"] {
				t.Errorf("%s: server.%d=%s, want server.%d=%s:%d:%d;%d", pod, s.ID, s, i+1, host,
					containerPorts["peer"], containerPorts["election"], containerPorts["client"])
			}
		}
		if cfg.ClientPort != containerPorts["client"] || !cfg.AdminServerEnabled || cfg.AdminServerPort != containerPorts["admin"] {
			t.Errorf("%s: client port %d, admin port %d (enabled %v); want the container's %d and %d", pod,
				cfg.ClientPort, cfg.AdminServerPort, cfg.AdminServerEnabled, containerPorts["client"], containerPorts["admin"])
		}
		for _, dir := range []string{cfg.DataDir, cfg.DataLogDir} {
			onClaim := false
			for name, path := range mounts {
				onClaim = onClaim || (claimed[name] && under(dir, path))
			}
			if !onClaim {
				t.Errorf("%s: %s is on no volume claim (mounts %v, claims %v)", pod, dir, mounts, claimed)
			}
		}
	}
}
