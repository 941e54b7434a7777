package fibermw

import (
	"strings"

	"github.com/gofiber/fiber/v3"
)

// misplacedBody answers a request that reached the handler where no route
// is known.
const misplacedBody = "server misconfigured: the lock middleware runs where no route is known; see the server log"

// refuseMisplaced answers a request that reached the handler before a route
// matched (the handler is a Use) with 500, never running the rest of the
// chain unlocked, and logs the first of them.
func (h *handler) refuseMisplaced(c fiber.Ctx) error {
	h.warned.Do(func() {
		h.logger.Error("fibermw: New's handler got a request before any route matched: it is registered with Use "+
			"(app.Use, a Group's handlers or Use, a RouteChain's All), where fiber does not know the route; "+
			"refusing with 500 rather than running it unlocked. Give it to each route instead: "+
			"app.Post(path, fibermw.New(locks), handler) (logged once per handler)",
			"method", strings.Clone(c.Method()), "path", strings.Clone(c.Path()), "use", strings.Clone(c.Route().Path))
	})
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	return c.Status(fiber.StatusInternalServerError).SendString(misplacedBody)
}
