// Command rawbind is the ceiling of tests/k8s/bench.sh: it does no
// scheduling at all. It lists the unbound pods of one schedulerName and the
// nodes, then POSTs pods/binding for every pod (filling each node with
// --per-node pods, in name order) with --concurrency requests in flight. What
// it reaches is the rate the API server accepts bindings on this machine.
// It stays up until SIGTERM, as a scheduler would. With --watch it then
// goes on binding the pods that appear (a workload made by controllers, as
// in tests/k8s/bench-cluster.sh), each to the next free slot.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	scheduler := flag.String("scheduler-name", "volcano", "spec.schedulerName of the pods to bind")
	concurrency := flag.Int("concurrency", 64, "bindings in flight at once")
	perNode := flag.Int("per-node", 16, "pods per node")
	follow := flag.Bool("watch", false, "go on binding pods that appear")
	flag.Parse()
	if err := run(*kubeconfig, *scheduler, *concurrency, *perNode, *follow); err != nil {
		fmt.Fprintln(os.Stderr, "rawbind:", err)
		os.Exit(1)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

func run(kubeconfig, scheduler string, concurrency, perNode int, follow bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// No client-side throttling: the API server is what is measured.
	cfg.QPS, cfg.Burst = 100000, 100000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: "spec.schedulerName=" + scheduler + ",spec.nodeName=",
	})
	if err != nil {
		return err
	}
	if len(pods.Items) > len(names)*perNode {
		return fmt.Errorf("%d pods do not fit %d nodes of %d", len(pods.Items), len(names), perNode)
	}
	work := make(chan int)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := &pods.Items[i]
				b := &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
					Target:     corev1.ObjectReference{Kind: "Node", Name: names[i/perNode]},
				}
				if err := client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
					failed.Add(1)
					fmt.Fprintf(os.Stderr, "bind %s/%s: %v\n", p.Namespace, p.Name, err)
				}
			}
		}()
	}
	for i := range pods.Items {
		work <- i
	}
	close(work)
	wg.Wait()
	took := time.Since(start).Seconds()
	fmt.Printf("rawbind: %d bindings posted (%d failed) in %.2f s = %.0f/s\n",
		len(pods.Items), failed.Load(), took, float64(len(pods.Items))/took)
	if !follow {
		return nil
	}
	return watchAndBind(ctx, client, scheduler, names, perNode, len(pods.Items), pods.ResourceVersion, concurrency)
}

// watchAndBind binds every unbound pod of the scheduler that appears from
// resourceVersion on, the n-th overall to node names[n/perNode].
func watchAndBind(ctx context.Context, client *kubernetes.Clientset, scheduler string, names []string,
	perNode, next int, rv string, concurrency int) error {
	type job struct {
		ns, name string
		uid      types.UID
		node     string
	}
	work := make(chan job, 4096)
	for w := 0; w < concurrency; w++ {
		go func() {
			for j := range work {
				b := &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: j.ns, UID: j.uid},
					Target:     corev1.ObjectReference{Kind: "Node", Name: j.node},
				}
				if err := client.CoreV1().Pods(j.ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
					fmt.Fprintf(os.Stderr, "bind %s/%s: %v\n", j.ns, j.name, err)
				}
			}
		}()
	}
	sent := map[types.UID]bool{}
	selector := "spec.schedulerName=" + scheduler + ",spec.nodeName="
	for {
		w, err := client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: rv})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				break
			}
			rv = p.ResourceVersion
			if ev.Type != watch.Added || sent[p.UID] {
				continue
			}
			if next/perNode >= len(names) {
				return fmt.Errorf("more pods than %d nodes of %d", len(names), perNode)
			}
			sent[p.UID] = true
			work <- job{p.Namespace, p.Name, p.UID, names[next/perNode]}
			next++
		}
		w.Stop()
		// Dropped (or too old to resume): list what is unbound and go on.
		list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return err
		}
		rv = list.ResourceVersion
		for i := range list.Items {
			p := &list.Items[i]
			if !sent[p.UID] && next/perNode < len(names) {
				sent[p.UID] = true
				work <- job{p.Namespace, p.Name, p.UID, names[next/perNode]}
				next++
			}
		}
	}
}
