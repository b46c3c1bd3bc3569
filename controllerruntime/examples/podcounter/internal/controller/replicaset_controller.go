// Package controller holds podcounter's reconciler.
package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// ReplicaSetReconciler counts each ReplicaSet's pods from the cache, with
// a label-selected List: the read openinformer's compact cache answers
// without decoding the other pods.
type ReplicaSetReconciler struct {
	client.Client
}

// Reconcile logs how many cached pods match the ReplicaSet's selector.
func (r *ReplicaSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rs appsv1.ReplicaSet
	if err := r.Get(ctx, req.NamespacedName, &rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rs.Spec.Selector == nil || len(rs.Spec.Selector.MatchLabels) == 0 {
		return ctrl.Result{}, nil
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(rs.Namespace), client.MatchingLabels(rs.Spec.Selector.MatchLabels)); err != nil {
		return ctrl.Result{}, err
	}
	logf.FromContext(ctx).Info("pods", "count", len(pods.Items), "replicas", rs.Status.Replicas)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: ReplicaSets and the pods
// they own.
func (r *ReplicaSetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.ReplicaSet{}).
		Owns(&corev1.Pod{}).
		Named("replicaset").
		Complete(r)
}
