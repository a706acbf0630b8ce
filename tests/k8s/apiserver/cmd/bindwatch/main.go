// Command bindwatch is the clock of tests/k8s/bench.sh: it lists the pods of
// one namespace, prints "ready" once its watch runs, and then notes the
// moment it sees the first and the last of them bound (spec.nodeName set),
// from one watch stream: no polling, so the figures have the resolution of
// the watch, and measuring does not load the API server.
// It prints "first <unix ns> last <unix ns>" and exits once every pod it
// listed first is bound. A watch the API server drops is listed again and
// resumed (pods bound in between count from that list).
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
	flag.Parse()
	if err := run(*kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "bindwatch:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	pods := client.CoreV1().Pods(namespace)
	bound := map[string]bool{}
	left := -1
	var first time.Time
	// A watch the API server drops (a slow watcher in a burst of events)
	// is listed again and resumed; pods bound meanwhile count from then.
	for left != 0 {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		seen := 0
		for _, p := range list.Items {
			if _, known := bound[p.Name]; !known && left >= 0 {
				continue // made after the start: not part of the workload
			}
			bound[p.Name] = p.Spec.NodeName != ""
			if p.Spec.NodeName == "" {
				seen++
			}
		}
		if left >= 0 && seen < left && first.IsZero() {
			first = time.Now()
		}
		if left < 0 {
			fmt.Println("ready")
		}
		left = seen
		if left == 0 {
			break
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return err
		}
		for left > 0 {
			ev, ok := <-w.ResultChan()
			if !ok || ev.Type == watch.Error {
				break
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			if was, known := bound[p.Name]; known && !was && p.Spec.NodeName != "" {
				if first.IsZero() {
					first = time.Now()
				}
				bound[p.Name] = true
				left--
			}
		}
		w.Stop()
	}
	if first.IsZero() {
		first = time.Now()
	}
	fmt.Printf("first %d last %d\n", first.UnixNano(), time.Now().UnixNano())
	return nil
}
