// Command churn is the load of tests/k8s/soak.sh: batch/v1 Jobs of --tasks
// pods, each pod running --duration (kwok honours tephra.io/duration), created
// at --rate pods a second until --total pods, each Job deleted by the TTL
// controller --ttl seconds after it finished. It prints a line every minute
// and "created <pods> in <seconds>" at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "soak", "namespace of the Jobs")
	scheduler := flag.String("scheduler-name", "volcano", "spec.schedulerName of the pods")
	rate := flag.Float64("rate", 100, "pods created a second")
	total := flag.Int("total", 1000, "pods in all")
	tasks := flag.Int("tasks", 10, "pods a Job")
	duration := flag.String("duration", "20s", "how long each pod runs")
	ttl := flag.Int("ttl", 5, "seconds a finished Job is kept")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *scheduler, *rate, *total, *tasks, *duration, int32(*ttl)); err != nil {
		fmt.Fprintln(os.Stderr, "churn:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, scheduler string, rate float64, total, tasks int, duration string, ttl int32) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	n := int32(tasks)
	start := time.Now()
	last := start
	for made, j := 0, 0; made < total; j++ {
		// Keep to the rate: Job j is due once its pods' share of time has passed.
		due := start.Add(time.Duration(float64(made) / rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%06d", j), Namespace: namespace},
			Spec: batchv1.JobSpec{
				Parallelism:             &n,
				Completions:             &n,
				TTLSecondsAfterFinished: &ttl,
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"tephra.io/duration": duration}},
					Spec: corev1.PodSpec{
						SchedulerName: scheduler,
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{
							Name:  "main",
							Image: "busybox",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("1"),
								corev1.ResourceMemory: resource.MustParse("1Gi"),
							}},
						}},
					},
				},
			},
		}
		for attempt := 0; ; attempt++ {
			_, err := client.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
			if err == nil {
				break
			}
			if attempt >= 30 {
				return fmt.Errorf("job %s: %v", job.Name, err)
			}
			time.Sleep(time.Second) // an API server restarting, say
		}
		made += tasks
		if time.Since(last) >= time.Minute {
			last = time.Now()
			fmt.Printf("churn: %d pods made in %.0f s\n", made, time.Since(start).Seconds())
		}
	}
	fmt.Printf("created %d in %.1f\n", total, time.Since(start).Seconds())
	return nil
}
