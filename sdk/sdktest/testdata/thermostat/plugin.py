#!/usr/bin/python3
"""A thermostat plugin in Python: the installed SDK and the kind's buf
image (descriptors/thermostat.binpb beside this file), nothing else."""

import grpc

import plugkit

MAX_CELSIUS = 40


class Thermostat:
    def __init__(self):
        self.celsius = 20.0

    def Set(self, request, context):
        if request.celsius > MAX_CELSIUS:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "set: %g °C is above %d °C" % (request.celsius, MAX_CELSIUS))
        previous, self.celsius = self.celsius, request.celsius
        resp = plugkit.message("thermostat.v1.SetResponse")(previous_celsius=previous)
        resp.changed_at.seconds = 1700000000
        return resp

    def Readings(self, request, context):
        for i in range(request.count):
            yield plugkit.message("thermostat.v1.Reading")(seq=i + 1, celsius=self.celsius)


if __name__ == "__main__":
    catalog = plugkit.Catalog("1.0.0", [
        plugkit.Implementation("thermostat", 1, 0, "example.com/pythermostat", "thermostat.v1.Thermostat", Thermostat()),
    ], files=plugkit.descriptor_set("descriptors/thermostat.binpb"))
    plugkit.serve(catalog, cookie=("PLUGKIT_THERMOSTAT", "thermostat"))
