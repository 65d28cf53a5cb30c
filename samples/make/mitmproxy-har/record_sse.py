"""mitmproxy addon: stream text/event-stream responses live AND keep their bytes for the HAR.

By default mitmdump buffers a whole response before forwarding it (an SSE stream then reaches
the client only when it ends), and a response it streams is saved with no body. This addon turns
streaming on for event streams only, copies every chunk as it passes, and puts the bytes back on
the flow when the stream ends (normally or by a disconnect), before the savehar addon writes the
HAR at exit. raw_content is set directly so no header (Content-Length) is changed.

usage: mitmdump -s record_sse.py --set hardump=FILE.har ...
"""
from mitmproxy import http


class RecordStreamedSSE:
    def responseheaders(self, flow: http.HTTPFlow) -> None:
        ctype = flow.response.headers.get("content-type", "")
        if not ctype.lower().startswith("text/event-stream"):
            return
        chunks: list[bytes] = []
        flow.metadata["mcpf_sse_chunks"] = chunks

        def forward(data: bytes) -> bytes:
            if data:
                chunks.append(data)
            return data

        flow.response.stream = forward

    def _keep(self, flow: http.HTTPFlow) -> None:
        chunks = flow.metadata.get("mcpf_sse_chunks")
        if chunks is not None and flow.response is not None:
            flow.response.raw_content = b"".join(chunks)

    def response(self, flow: http.HTTPFlow) -> None:
        self._keep(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._keep(flow)


addons = [RecordStreamedSSE()]
