// Command runwatch is the clock of tests/k8s/bench-cluster.sh: one watch on
// the pods of a namespace, started before the workload exists, that notes
// the moment it has seen --expect distinct pods Running (or already
// Succeeded: a pod may finish between two events) and exits printing
// "last <unix ns> running <n>". Pods made after the count is reached do not
// matter. A watch the API server drops is listed again and resumed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "bench", "namespace of the pods")
	expect := flag.Int("expect", 0, "pods to see running")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *expect); err != nil {
		fmt.Fprintln(os.Stderr, "runwatch:", err)
		os.Exit(1)
	}
}

func ran(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded
}

func run(kubeconfig, namespace string, expect int) error {
	if expect <= 0 {
		return fmt.Errorf("--expect must be positive")
	}
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
	pods := client.CoreV1().Pods(namespace)
	seen := map[string]bool{}
	ready := false
	for len(seen) < expect {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			if ran(&list.Items[i]) {
				seen[list.Items[i].Name] = true
			}
		}
		if !ready {
			fmt.Println("ready")
			ready = true
		}
		if len(seen) >= expect {
			break
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return err
		}
		for len(seen) < expect {
			ev, ok := <-w.ResultChan()
			if !ok || ev.Type == watch.Error {
				break
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted && ran(p) {
				seen[p.Name] = true
			}
		}
		w.Stop()
	}
	fmt.Printf("last %d running %d\n", time.Now().UnixNano(), len(seen))
	return nil
}
