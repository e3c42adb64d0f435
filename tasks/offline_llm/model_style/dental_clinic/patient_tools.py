"""The dental clinic's patient, dentist and billing tools, as the model writes them."""

METHODS = r'''def get_patient_file(self, patient_id: str) -> dict:
    """Get a patient's details.

    Args:
        patient_id (str): The patient's id, e.g. "PT-0042".

    Returns:
        dict: {"success": True, "data": <patient>} or {"success": False, "error": ...}.

    Constraints:
        - The patient must exist.
    """
    patient = self.patients.get(patient_id)
    if patient is None:
        return {"success": False, "error": f"Patient {patient_id} not found"}
    return {"success": True, "data": dict(patient)}


def find_patient_by_name(self, name: str) -> dict:
    """Look up patients by name (case-insensitive, partial match).

    Args:
        name (str): The patient's name or part of it.

    Returns:
        dict: {"success": True, "data": [<patient>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - The name must not be empty.
    """
    if not isinstance(name, str) or not name.strip():
        return {"success": False, "error": "Please provide a name to look up"}
    needle = name.strip().lower()
    return {
        "success": True,
        "data": [dict(p) for p in self.patients.values() if needle in p["full_name"].lower()],
    }


def add_new_patient(
    self, full_name: str, date_of_birth: str, phone: str, insurance_plan: str
) -> dict:
    """Register a new patient with the clinic.

    Args:
        full_name (str): The patient's full name.
        date_of_birth (str): Date of birth, YYYY-MM-DD.
        phone (str): Contact phone number.
        insurance_plan (str): none, basic or premium.

    Returns:
        dict: {"success": True, "message": ..., "data": <new patient>} or
        {"success": False, "error": ...}.

    Constraints:
        - Insurance plans are none, basic or premium.
    """
    if not isinstance(full_name, str) or not full_name.strip():
        return {"success": False, "error": "full_name is required"}
    if insurance_plan not in self.PLANS:
        return {"success": False, "error": f"Unknown insurance plan '{insurance_plan}'"}
    try:
        born = datetime.fromisoformat(str(date_of_birth))
    except ValueError:
        return {"success": False, "error": "date_of_birth must be YYYY-MM-DD"}
    if born >= self._now():
        return {"success": False, "error": "date_of_birth must be in the past"}
    patient_id = f"PT-{self.next_patient_number:04d}"
    self.next_patient_number += 1
    patient: Patient = {
        "patient_id": patient_id,
        "full_name": full_name.strip(),
        "date_of_birth": born.date().isoformat(),
        "phone": str(phone).strip(),
        "insurance_plan": insurance_plan,
        "balance_due": 0.0,
        "status": "active",
    }
    self.patients[patient_id] = patient
    return {"success": True, "message": f"Registered {patient_id}", "data": dict(patient)}


def update_insurance(self, patient_id: str, insurance_plan: str) -> dict:
    """Change the insurance plan on file for a patient.

    Args:
        patient_id (str): The patient's id.
        insurance_plan (str): The new plan: none, basic or premium.

    Returns:
        dict: {"success": True, "message": ..., "data": <patient>} or
        {"success": False, "error": ...}.

    Constraints:
        - Insurance plans are none, basic or premium; archived patients cannot be changed.
    """
    patient = self.patients.get(patient_id)
    if patient is None:
        return {"success": False, "error": f"Patient {patient_id} not found"}
    if insurance_plan not in self.PLANS:
        return {"success": False, "error": f"Unknown insurance plan '{insurance_plan}'"}
    if patient["status"] == "archived":
        return {"success": False, "error": f"Patient {patient_id} is archived"}
    patient["insurance_plan"] = insurance_plan
    message = f"{patient['full_name']} is now on the {insurance_plan} plan"
    return {"success": True, "message": message, "data": dict(patient)}


def list_dentists(self, specialty: str | None = None) -> dict:
    """List the clinic's dentists and hygienists.

    Args:
        specialty (str): Only this specialty: general, hygienist or orthodontist.

    Returns:
        dict: {"success": True, "data": [<dentist>, ...]} or {"success": False, "error": ...}.

    Constraints:
        - A specialty filter must be general, hygienist or orthodontist.
    """
    if specialty is not None and specialty not in ("general", "hygienist", "orthodontist"):
        return {"success": False, "error": f"Unknown specialty '{specialty}'"}
    found = [
        dict(d)
        for d in self.dentists.values()
        if specialty is None or d["specialty"] == specialty
    ]
    return {"success": True, "data": found}


def get_invoice_details(self, invoice_id: str) -> dict:
    """Get an invoice with what is still outstanding on it.

    Args:
        invoice_id (str): The invoice's id, e.g. "IN-0009".

    Returns:
        dict: {"success": True, "data": <invoice plus "outstanding">} or
        {"success": False, "error": ...}.

    Constraints:
        - The invoice must exist.
    """
    invoice = self.invoices.get(invoice_id)
    if invoice is None:
        return {"success": False, "error": f"Invoice {invoice_id} not found"}
    return {"success": True, "data": {**invoice, "outstanding": self._outstanding(invoice)}}


def list_open_invoices(self, patient_id: str | None = None) -> dict:
    """List invoices that still have money owing, oldest first.

    Args:
        patient_id (str): Only this patient's invoices.

    Returns:
        dict: {"success": True, "data": [<invoice plus "outstanding">, ...]} or
        {"success": False, "error": ...}.

    Constraints:
        - A patient filter must name an existing patient.
    """
    if patient_id is not None and patient_id not in self.patients:
        return {"success": False, "error": f"Patient {patient_id} not found"}
    rows = [
        {**inv, "outstanding": self._outstanding(inv)}
        for inv in self.invoices.values()
        if inv["status"] == "open" and (patient_id is None or inv["patient_id"] == patient_id)
    ]
    return {"success": True, "data": sorted(rows, key=lambda r: r["issued_on"])}


def post_patient_payment(self, invoice_id: str, amount: float) -> dict:
    """Record a patient's payment against an invoice.

    Args:
        invoice_id (str): The invoice being paid.
        amount (float): Amount paid, in dollars.

    Returns:
        dict: {"success": True, "message": ..., "data": <invoice>} or
        {"success": False, "error": ...}.

    Constraints:
        - Payments are positive and at most what is still owed on the invoice.
        - The patient's balance goes down by the amount; a fully paid invoice is marked paid.
    """
    invoice = self.invoices.get(invoice_id)
    if invoice is None:
        return {"success": False, "error": f"Invoice {invoice_id} not found"}
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
        return {"success": False, "error": "amount must be a positive number"}
    outstanding = self._outstanding(invoice)
    if amount - outstanding > 0.005:
        error = f"Only ${outstanding:.2f} is outstanding on {invoice_id}"
        return {"success": False, "error": error}
    invoice["amount_paid"] = round(invoice["amount_paid"] + amount, 2)
    if self._outstanding(invoice) <= 0.005:
        invoice["status"] = "paid"
    patient = self.patients[invoice["patient_id"]]
    patient["balance_due"] = round(max(0.0, patient["balance_due"] - amount), 2)
    message = f"Payment of ${amount:.2f} recorded on {invoice_id}"
    return {"success": True, "message": message, "data": dict(invoice)}
'''
