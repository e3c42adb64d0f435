"""The blood bank's inventory and hospital-request tools, as the model writes them."""

METHODS = r'''def get_blood_unit(self, unit_id: str) -> dict:
    """Look up one blood unit, with whether it has expired.

    Args:
        unit_id (str): The unit's id, e.g. "BU-0031".

    Returns:
        dict: {"success": True, "data": <unit record plus "is_expired">} or
        {"success": False, "error": ...}.

    Constraints:
        - The unit must exist.
    """
    unit = self.blood_units.get(unit_id)
    if unit is None:
        return {"success": False, "error": f"No blood unit with id {unit_id}"}
    return {"success": True, "data": {**unit, "is_expired": self._is_expired(unit)}}


def list_units_by_blood_type(
    self, blood_type: str, component: str | None = None, status: str | None = None
) -> dict:
    """List the units of one blood type, soonest-expiring first.

    Args:
        blood_type (str): One of O-, O+, A-, A+, B-, B+, AB-, AB+.
        component (str): Only this component: whole_blood, plasma or platelets.
        status (str): Only units in this status: available, reserved, issued or discarded.

    Returns:
        dict: {"success": True, "data": [<unit>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - Filters must name a valid blood type, component and unit status.
    """
    if blood_type not in self.BLOOD_TYPES:
        return {"success": False, "error": f"'{blood_type}' is not a valid blood type"}
    if component is not None and component not in self.COMPONENTS:
        return {"success": False, "error": f"Unknown component '{component}'"}
    if status is not None and status not in ("available", "reserved", "issued", "discarded"):
        return {"success": False, "error": f"Unknown unit status '{status}'"}
    units = [
        dict(u)
        for u in self.blood_units.values()
        if u["blood_type"] == blood_type
        and (component is None or u["component"] == component)
        and (status is None or u["status"] == status)
    ]
    units.sort(key=lambda u: u["expires_on"])
    return {"success": True, "data": units}


def get_inventory_summary(self, component: str | None = None) -> dict:
    """Count the usable units on the shelf (available and not expired) per blood type.

    Args:
        component (str): Only count this component: whole_blood, plasma or platelets.

    Returns:
        dict: {"success": True, "data": {"component": ..., "counts": {<blood type>: <n>},
        "total": <n>}} or {"success": False, "error": ...}.

    Constraints:
        - Expired units are not counted as usable stock.
    """
    if component is not None and component not in self.COMPONENTS:
        return {"success": False, "error": f"Unknown component '{component}'"}
    counts = {blood_type: 0 for blood_type in self.BLOOD_TYPES}
    for unit in self.blood_units.values():
        if unit["status"] != "available" or self._is_expired(unit):
            continue
        if component is None or unit["component"] == component:
            counts[unit["blood_type"]] += 1
    data = {"component": component or "all", "counts": counts, "total": sum(counts.values())}
    return {"success": True, "data": data}


def discard_unit(self, unit_id: str, reason: str) -> dict:
    """Take an available unit off the shelf for good (expired, damaged, failed testing).

    Args:
        unit_id (str): The unit to discard.
        reason (str): Why it is discarded, e.g. "expired".

    Returns:
        dict: {"success": True, "message": ..., "data": <unit>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only available units can be discarded, and a reason is required.
    """
    unit = self.blood_units.get(unit_id)
    if unit is None:
        return {"success": False, "error": f"No blood unit with id {unit_id}"}
    if not isinstance(reason, str) or not reason.strip():
        return {"success": False, "error": "A reason is required to discard a unit"}
    if unit["status"] != "available":
        return {
            "success": False,
            "error": f"Unit {unit_id} is {unit['status']}; only available units can be discarded",
        }
    unit["status"] = "discarded"
    message = f"Discarded unit {unit_id} ({reason.strip()})"
    return {"success": True, "message": message, "data": dict(unit)}


def get_hospital_request(self, request_id: str) -> dict:
    """Look up one hospital request with the units allocated to it.

    Args:
        request_id (str): The request's id, e.g. "HR-0004".

    Returns:
        dict: {"success": True, "data": <request>} or {"success": False, "error": ...}.

    Constraints:
        - The request must exist.
    """
    request = self.hospital_requests.get(request_id)
    if request is None:
        return {"success": False, "error": f"No hospital request with id {request_id}"}
    data = {**request, "allocated_unit_ids": list(request["allocated_unit_ids"])}
    return {"success": True, "data": data}


def list_open_requests(self, hospital_name: str | None = None, priority: str | None = None) -> dict:
    """List hospital requests still waiting for units (status open), most urgent first.

    Args:
        hospital_name (str): Only requests from hospitals whose name contains this text.
        priority (str): Only requests of this priority: routine, urgent or emergency.

    Returns:
        dict: {"success": True, "data": [<request>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - A priority filter must be routine, urgent or emergency.
    """
    order = {"emergency": 0, "urgent": 1, "routine": 2}
    if priority is not None and priority not in order:
        return {"success": False, "error": f"Unknown priority '{priority}'"}
    needle = (hospital_name or "").strip().lower()
    found = [
        {**r, "allocated_unit_ids": list(r["allocated_unit_ids"])}
        for r in self.hospital_requests.values()
        if r["status"] == "open"
        and needle in r["hospital_name"].lower()
        and (priority is None or r["priority"] == priority)
    ]
    found.sort(key=lambda r: (order[r["priority"]], r["needed_by"]))
    return {"success": True, "data": found}


def allocate_units(self, request_id: str) -> dict:
    """Reserve compatible, unexpired units for an open hospital request (soonest-expiring first).

    Args:
        request_id (str): The open request to fill.

    Returns:
        dict: {"success": True, "message": ..., "data": <request>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only open requests can be allocated, and only in full: exactly units_needed units.
        - Units must be available, unexpired, of the requested component and compatible with
          the patient's blood type.
    """
    request = self.hospital_requests.get(request_id)
    if request is None:
        return {"success": False, "error": f"No hospital request with id {request_id}"}
    if request["status"] != "open":
        return {"success": False, "error": f"Request {request_id} is {request['status']}, not open"}
    donors_ok = self._compatible_types(request["blood_type"], request["component"])
    candidates = [
        u
        for u in self.blood_units.values()
        if u["status"] == "available"
        and u["component"] == request["component"]
        and u["blood_type"] in donors_ok
        and not self._is_expired(u)
    ]
    candidates.sort(key=lambda u: (u["expires_on"], u["unit_id"]))
    needed = request["units_needed"]
    if len(candidates) < needed:
        return {
            "success": False,
            "error": f"Only {len(candidates)} compatible units available; "
            f"request {request_id} needs {needed}",
        }
    chosen = candidates[:needed]
    for unit in chosen:
        unit["status"] = "reserved"
        unit["request_id"] = request_id
    request["allocated_unit_ids"] = [u["unit_id"] for u in chosen]
    request["status"] = "allocated"
    return {
        "success": True,
        "message": f"Reserved {needed} units for {request_id}",
        "data": {**request, "allocated_unit_ids": list(request["allocated_unit_ids"])},
    }


def fulfill_request(self, request_id: str) -> dict:
    """Issue every unit reserved for an allocated request, closing it as fulfilled.

    Args:
        request_id (str): The allocated request to send out.

    Returns:
        dict: {"success": True, "message": ..., "data": <request>} or
        {"success": False, "error": ...}.

    Constraints:
        - Only allocated requests can be fulfilled; each reserved unit becomes issued.
    """
    request = self.hospital_requests.get(request_id)
    if request is None:
        return {"success": False, "error": f"No hospital request with id {request_id}"}
    if request["status"] != "allocated":
        return {
            "success": False,
            "error": f"Request {request_id} is {request['status']}; "
            "only allocated requests can be fulfilled",
        }
    for unit_id in request["allocated_unit_ids"]:
        unit = self.blood_units.get(unit_id)
        if unit is not None:
            unit["status"] = "issued"
    request["status"] = "fulfilled"
    return {
        "success": True,
        "message": f"Issued {len(request['allocated_unit_ids'])} units to "
        f"{request['hospital_name']}",
        "data": {**request, "allocated_unit_ids": list(request["allocated_unit_ids"])},
    }
'''
