package fibermw

// misplacedWhy is why a handler registered with Use refuses its requests
// (logged once per handler, see httpmw.Middleware.RefuseMisplaced).
const misplacedWhy = "fibermw's handler got a request before any route matched: it is registered with Use " +
	"(app.Use, a Group's handlers or Use, a RouteChain's All), where fiber does not know the route. " +
	"Give it to each route instead: app.Post(path, fibermw.New(locks), handler)"
