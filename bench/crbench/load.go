package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// load creates the pods and secrets with a few concurrent writers; with
// status, each pod's status is then written through the status
// subresource as the kubelet writes it, so that the cached objects are
// the size a real cluster serves.
func load(cl client.Client, pods, secrets int, status bool) error {
	ctx := context.Background()
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := 0; i < pods+secrets && ctx.Err() == nil; i++ {
		g.Go(func() error { return create(ctx, cl, i, pods, status) })
	}
	return g.Wait()
}

// create makes object i: a pod below pods, with its status if asked, then
// the secrets.
func create(ctx context.Context, cl client.Client, i, pods int, status bool) error {
	if i >= pods {
		return cl.Create(ctx, benchSecret(i-pods))
	}
	p := benchPod(i)
	if err := cl.Create(ctx, p); err != nil {
		return err
	}
	if !status {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": benchStatus(i, p.CreationTimestamp.Time)})
	if err != nil {
		return err
	}
	return cl.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubelet"))
}

func podName(i int) string { return fmt.Sprintf("pod-%06d", i) }

// benchPod is a pod of a typical size: labels, annotations, an owner,
// two containers with env, ports, probes, resources and volumes.
func benchPod(i int) *corev1.Pod {
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/team/" + name + ":v1.2.3",
			Env:          []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west-1"}, {Name: "LOG_LEVEL", Value: "info"}},
			Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "bench", Name: podName(i),
			Labels:      map[string]string{"app": "bench", "group": fmt.Sprint(i % groups), "pod-template-hash": "5d8f9c7b6d", "tier": "backend"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes:    []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			NodeName:   fmt.Sprintf("node-%03d", i%50),
		},
	}
}

// benchStatus is the status a kubelet reports for benchPod(i) running:
// phase, the five conditions, host and pod IPs, QoS class, start times and
// both containers' statuses with image IDs and container IDs.
func benchStatus(i int, created time.Time) corev1.PodStatus {
	digest := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	scheduled := metav1.NewTime(created.Add(time.Second).Truncate(time.Second))
	started := metav1.NewTime(scheduled.Add(2 * time.Second))
	ready := metav1.NewTime(started.Add(5 * time.Second))
	cond := func(t corev1.PodConditionType, at metav1.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	host := fmt.Sprintf("10.0.%d.%d", i%50/250, i%50+10)
	podIP := fmt.Sprintf("10.244.%d.%d", i/250%250, i%250+2)
	st := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers", started), cond(corev1.PodInitialized, scheduled),
			cond(corev1.PodReady, ready), cond(corev1.ContainersReady, ready), cond(corev1.PodScheduled, scheduled),
		},
		HostIP: host, HostIPs: []corev1.HostIP{{IP: host}},
		PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: &scheduled,
		QOSClass:  corev1.PodQOSBurstable,
	}
	for _, name := range []string{"app", "sidecar"} {
		image := "registry.example.com/team/" + name + ":v1.2.3"
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: name, Ready: true, Started: new(true), RestartCount: 0,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Image:       image,
			ImageID:     "registry.example.com/team/" + name + "@sha256:" + digest(image),
			ContainerID: "containerd://" + digest(fmt.Sprint(name, i)),
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "config", MountPath: "/etc/app"},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true, RecursiveReadOnly: new(corev1.RecursiveReadOnlyDisabled)}},
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		})
	}
	return st
}

func benchSecret(i int) *corev1.Secret {
	data := make([]byte, 1024)
	for j := range data {
		data[j] = byte('a' + (i+j)%26)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("secret-%06d", i), Labels: map[string]string{"app": "bench"}},
		Data:       map[string][]byte{"token": data},
	}
}

// driver patches pod status at a steady rate, as the kubelet reports a
// probe, spread over all pods: consecutive updates go to pods far apart.
type driver struct {
	cl          client.Client
	pods, rate  int
	next        int
	sent, faild atomic.Int64
}

// run patches until stop closes and returns the updates that succeeded
// and failed. It issues what is due by the clock, so that late ticks on a
// loaded machine do not lower the rate; it skips (and counts as failed)
// only when the workers lag by a second's worth.
func (d *driver) run(stop <-chan struct{}) (sent, failed int64) {
	s0, f0 := d.sent.Load(), d.faild.Load()
	jobs := make(chan int, d.rate)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range jobs {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: podName(i)}}
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","lastProbeTime":%q}]}}`, time.Now().UTC().Format(time.RFC3339Nano))
				if err := d.cl.Status().Patch(context.Background(), p, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.FieldOwner("kubelet")); err != nil {
					d.faild.Add(1)
				} else {
					d.sent.Add(1)
				}
			}
		})
	}
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	for issued, running := int64(0), true; running; {
		select {
		case <-stop:
			running = false
		case now := <-tick.C:
			issued = d.issue(jobs, issued, int64(now.Sub(start).Seconds()*float64(d.rate)))
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	return d.sent.Load() - s0, d.faild.Load() - f0
}

// issue queues the updates from issued up to due and returns due. 7919 is
// prime and no divisor of any pod count used: the sequence visits every
// pod before it repeats one.
func (d *driver) issue(jobs chan<- int, issued, due int64) int64 {
	for ; issued < due; issued++ {
		select {
		case jobs <- d.next * 7919 % d.pods:
			d.next++
		default:
			d.faild.Add(1)
		}
	}
	return issued
}
