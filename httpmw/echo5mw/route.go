package echo5mw

import "github.com/labstack/echo/v5"

// placement is where a request meets the middleware.
type placement int

const (
	// routed: the router matched a route of the request's method.
	routed placement = iota
	// unmatched: a 404, a 405, the automatic answer to OPTIONS or a
	// RouteNotFound route.
	unmatched
	// beforeRouting: the middleware runs under e.Pre and the router will
	// match a route.
	beforeRouting
)

// placementOf classifies c by its RouteInfo, which echo v5's router fills
// for every request it routes (router.go, DefaultRouter.Route). Before
// routing (e.Pre) it is the zero RouteInfo: the middleware then routes the
// request on a context of its own, and refuses it unless echo will match no
// route. A custom Router that leaves RouteInfo empty is refused the same
// way: a request is never run unlocked on a guess.
func placementOf(c *echo.Context) placement {
	p := routeKind(c.RouteInfo())
	if p == beforeRouting && routeKind(routeCopy(c)) == unmatched {
		return unmatched
	}
	return p
}

// routeKind is what the router's RouteInfo ri says: a matched route; a
// RouteNotFound route (its Method is echo.RouteNotFound, as for the ones
// g.Use registers) or a route named echo.NotFoundRouteName (404) or
// echo.MethodNotAllowedRouteName (405 and the automatic OPTIONS answer):
// unmatched; nothing (not routed yet): beforeRouting.
func routeKind(ri echo.RouteInfo) placement {
	switch {
	case ri.Method == echo.RouteNotFound, ri.Name == echo.NotFoundRouteName, ri.Name == echo.MethodNotAllowedRouteName:
		return unmatched
	case ri.Name == "" && ri.Method == "" && ri.Path == "":
		return beforeRouting
	}
	return routed
}

// routeCopy routes a shallow copy of c's request (the router sets its
// Pattern) on a context of its own and returns the RouteInfo it got.
func routeCopy(c *echo.Context) echo.RouteInfo {
	r := c.Request()
	scratch := c.Echo().NewContext(r.WithContext(r.Context()), nil)
	c.Echo().Router().Route(scratch)
	return scratch.RouteInfo()
}
