package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// request is a parsed API request: the resource URL and what is asked of it.
type request struct {
	call   Call
	server *Server
	r      *http.Request
}

// ServeHTTP serves the Kubernetes REST API for the Cluster's resources, always answering in
// JSON. A request failing with an error that is not an API status (an injected
// ConnectionRefused) aborts the connection.
func (c *Cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := c.serve(w, r); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// serve answers r on w, or returns the error that should fail it without a response; it then
// has written nothing.
func (c *Cluster) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Body != nil {
		defer func() { _ = r.Body.Close() }()
	}
	req, err := c.parse(r)
	if err == nil {
		err = c.takeFaultFor(req.call.Verb, req.call.Resource.Resource)
	}
	if err == nil {
		err = c.dispatch(w, req)
	}
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		req.call.Code = writeStatus(w, status.Status())
		err = nil
	}
	c.record(req.call)
	return err
}

// dispatch serves a parsed request and records it; a watch is recorded once it started.
func (c *Cluster) dispatch(w http.ResponseWriter, req *request) error {
	if req.call.Verb != "watch" {
		if err := req.answer(w); err != nil {
			return err
		}
		c.record(req.call)
		return nil
	}
	wi, err := req.startWatch(w)
	if err != nil {
		return err
	}
	c.record(req.call)
	if wi != nil {
		defer wi.Stop()
		req.stream(req.r.Context(), w, wi)
	}
	return nil
}

// parse resolves the URL to a served resource: /api/v1/... or /apis/group/version/..., then
// an optional namespaces/ns, the resource, a name and a subresource.
func (c *Cluster) parse(r *http.Request) (*request, error) {
	req := &request{r: r}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		req.call.Resource.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		req.call.Resource.Group, req.call.Resource.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return req, notFound(r)
	}
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		req.call.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) > 3 {
		return req, notFound(r)
	}
	req.call.Resource.Resource = parts[0]
	if len(parts) > 1 {
		req.call.Name = parts[1]
	}
	if len(parts) > 2 {
		req.call.Subresource = parts[2]
	}
	req.call.Verb = verbOf(r, req.call.Name)
	req.server = c.server(req.call.Resource)
	if req.server == nil || !req.inScope() {
		return req, notFound(r)
	}
	return req, nil
}

// inScope rejects what has no route on an API server: a namespace on a cluster-scoped
// resource, an object of a namespaced one without its namespace, an unknown subresource.
func (q *request) inScope() bool {
	switch {
	case q.server.opts.ClusterScoped && q.call.Namespace != "":
		return false
	case !q.server.opts.ClusterScoped && q.call.Namespace == "" && (q.call.Name != "" || q.call.Verb == "create"):
		return false
	}
	return q.call.Subresource == "" || (q.call.Subresource == "status" && q.server.opts.StatusSubresource)
}

func verbOf(r *http.Request, name string) string {
	switch {
	case r.Method == http.MethodGet && name != "":
		return "get"
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		return "watch"
	case r.Method == http.MethodGet:
		return "list"
	case r.Method == http.MethodPost && name == "":
		return "create"
	case r.Method == http.MethodPut && name != "":
		return "update"
	case r.Method == http.MethodPatch && name != "":
		return "patch"
	case r.Method == http.MethodDelete && name != "":
		return "delete"
	case r.Method == http.MethodDelete:
		return "deletecollection"
	}
	return r.Method
}

func notFound(r *http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, r.Method, schema.GroupResource{}, "",
		"the server could not find the requested resource", 0, true)
}

// answer serves every verb but watch.
func (q *request) answer(w http.ResponseWriter) error {
	if q.r.URL.Query().Has("dryRun") {
		return apierrors.NewBadRequest("fake: dryRun is not supported")
	}
	var obj runtime.Object
	var err error
	code := http.StatusOK
	switch q.call.Verb {
	case "get":
		obj, err = q.server.Get(q.call.Namespace, q.call.Name)
	case "list":
		obj, err = q.list()
	case "create":
		obj, err = q.create()
		code = http.StatusCreated
	case "update":
		obj, err = q.update()
	case "patch":
		obj, err = q.patch()
	case "delete":
		obj, err = q.delete()
	case "deletecollection":
		obj, err = q.deleteCollection()
	default:
		return apierrors.NewMethodNotSupported(q.server.kind.resource, q.call.Verb)
	}
	if err != nil {
		return err
	}
	q.call.Code = code
	writeJSON(w, code, q.server.withKind(obj))
	return nil
}

func (q *request) listOptions() (metav1.ListOptions, error) {
	var o metav1.ListOptions
	if err := scheme.ParameterCodec.DecodeParameters(q.r.URL.Query(), metav1.Unversioned, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	return o, nil
}

func (q *request) list() (runtime.Object, error) {
	o, err := q.listOptions()
	if err != nil {
		return nil, err
	}
	return q.server.list(q.r.Context(), q.call.Namespace, o)
}

func (q *request) create() (runtime.Object, error) {
	obj, err := q.body()
	if err != nil {
		return nil, err
	}
	return q.server.Create(obj)
}

func (q *request) update() (runtime.Object, error) {
	obj, err := q.body()
	if err != nil {
		return nil, err
	}
	if name := metaOf(obj).GetName(); name != q.call.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, q.call.Name))
	}
	if q.call.Subresource == "status" {
		return q.server.UpdateStatus(obj)
	}
	return q.server.Update(obj)
}

func (q *request) patch() (runtime.Object, error) {
	data, err := io.ReadAll(q.r.Body)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	pt := types.PatchType(mediaType(q.r))
	return q.server.patch(q.call.Namespace, q.call.Name, pt, data, q.call.Subresource == "status")
}

func (q *request) delete() (runtime.Object, error) {
	var opts metav1.DeleteOptions
	if err := q.decode(&opts); err != nil {
		return nil, err
	}
	obj, err := q.server.deleteIf(q.call.Namespace, q.call.Name, opts.Preconditions)
	if err != nil {
		return nil, err
	}
	return q.success(obj), nil
}

// deleteCollection deletes what a LIST with the request's options returns, one by one.
func (q *request) deleteCollection() (runtime.Object, error) {
	list, err := q.list()
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	for _, item := range items {
		m := metaOf(item)
		if _, err := q.server.Delete(m.GetNamespace(), m.GetName()); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// success is the Status an API server answers a delete with.
func (q *request) success(deleted runtime.Object) *metav1.Status {
	m := metaOf(deleted)
	return &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
		Name: m.GetName(), Group: q.call.Resource.Group, Kind: q.call.Resource.Resource, UID: m.GetUID(),
	}}
}

// body decodes the request's object: JSON into the served type, other media types (protobuf)
// with the Server's scheme. The namespace of the URL fills in an empty one and must match a
// set one.
func (q *request) body() (runtime.Object, error) {
	obj := q.server.kind.newObj()
	if err := q.decode(obj); err != nil {
		return nil, err
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("fake: %T has no object metadata", obj))
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(q.call.Namespace)
	} else if m.GetNamespace() != q.call.Namespace && !q.server.opts.ClusterScoped {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return obj, nil
}

// decode reads the request body into into; an empty body leaves it as it is.
func (q *request) decode(into runtime.Object) error {
	data, err := io.ReadAll(q.r.Body)
	if err != nil || len(data) == 0 {
		return err
	}
	if mt := mediaType(q.r); mt != "" && mt != runtime.ContentTypeJSON {
		_, _, err = serializer.NewCodecFactory(q.server.opts.Scheme).UniversalDeserializer().Decode(data, nil, into)
	} else {
		err = json.Unmarshal(data, into)
	}
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("fake: request body does not decode: %v", err))
	}
	return nil
}

func mediaType(r *http.Request) string {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt
}

// startWatch starts a WATCH as the API server does: once accepted, the response is a stream of
// JSON watch events, one per line; it is nil for an injected nil watch, a stream that ends at
// once.
func (q *request) startWatch(w http.ResponseWriter) (watch.Interface, error) {
	o, err := q.listOptions()
	if err != nil {
		return nil, err
	}
	wi, err := q.server.watch(q.r.Context(), q.call.Namespace, o)
	if err != nil {
		return nil, err
	}
	q.call.Code = http.StatusOK
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(http.StatusOK)
	flush(w)
	return wi, nil
}

// stream copies watch events to w, each flushed, until the watch ends, the client leaves or a
// write fails.
func (q *request) stream(ctx context.Context, w http.ResponseWriter, wi watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			obj := q.server.withKind(ev.Object.DeepCopyObject())
			line, err := json.Marshal(metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Object: obj}})
			if err != nil {
				return
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return
			}
			flush(w)
		}
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// withKind sets apiVersion and kind on an object, or list, of the served kind, as the API server
// sends them; obj must be the caller's own.
func (s *Server) withKind(obj runtime.Object) runtime.Object {
	if _, isStatus := obj.(*metav1.Status); isStatus || !obj.GetObjectKind().GroupVersionKind().Empty() {
		return withStatusKind(obj)
	}
	gvk := s.kind.gvk
	if _, isList := obj.(metav1.ListInterface); isList {
		gvk = gvk.GroupVersion().WithKind(gvk.Kind + "List")
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}

// withStatusKind gives a Status the apiVersion and kind the API server sends with it.
func withStatusKind(obj runtime.Object) runtime.Object {
	if st, ok := obj.(*metav1.Status); ok && st.Kind == "" {
		st.APIVersion, st.Kind = "v1", "Status"
	}
	return obj
}

// writeStatus writes a failure as the API server does, with Retry-After when the status asks
// the client to come back later, and returns the HTTP code sent.
func writeStatus(w http.ResponseWriter, st metav1.Status) int {
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	writeJSON(w, code, withStatusKind(&st))
	return code
}

func writeJSON(w http.ResponseWriter, code int, obj runtime.Object) {
	data, err := json.Marshal(obj)
	if err != nil {
		code = http.StatusInternalServerError
		data, _ = json.Marshal(withStatusKind(&apierrors.NewInternalError(err).ErrStatus))
	}
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}
